"""`report` writes one offline HTML page of a run, and it renders in a real headless Chromium:
every plot decodes, the trials table lists the trials best first with failures and early stops,
and the screenshot is not blank. Finished (a real ASHA search) and interrupted runs alike."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tune_app.rundir import read as results

from .conftest import user_module
from .test_analyze import _experiment

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no `chromium` binary to render the page (CI installs it: apt-get install chromium)",
)
BROWSER_TIMEOUT_S = 60
PLOTS_PER_EXPERIMENT = 3  # learning curves, best over wall time, parameters against the metric

# score = width / 16 * step + x. The [32, 32] net raises at step 3, before ASHA's only rung (3);
# [16] and [8] reach that rung after [64, 64] has, below it, so ASHA stops them there.

SPEC = """
metric: score
mode: max
seed: 1
scheduler: {type: asha, max_t: 6, grace_period: 3, reduction_factor: 2}
experiments:
  steps:
    run: steps:train
    stop: {training_iteration: 6}
    config:
      layers: {grid_search: [[64, 64], [32, 32], [16], [8]]}
      x: {uniform: [0, 1]}
"""


@pytest.fixture(scope="module")
def finished_run(ray_session, tmp_path_factory) -> Path:
    """A finished ASHA search of 4 trials: one failed, some stopped early."""
    from tune_app.cli import main

    folder = tmp_path_factory.mktemp("report")
    user_module("report_steps.py", folder, "steps.py")
    (folder / "spec.yaml").write_text(SPEC)
    code = main(["run", str(folder / "spec.yaml"), "--storage-path", str(folder / "o"), "-q"])
    assert code == 1  # the failed trial
    return folder / "o" / "steps"


class Dom(HTMLParser):
    """The tags (name, attributes) and text of an HTML document, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]

    def rows(self) -> list[str]:
        """The trial ids of the trials table, top to bottom."""
        return [a["data-trial"] for a in self.all("tr") if "data-trial" in a]

    def joined(self) -> str:
        return " ".join("".join(self.text).split())


def parse(html: str) -> Dom:
    dom = Dom()
    dom.feed(html)
    return dom


def chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on the page, from disk, with its own profile, bounded in time."""
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--virtual-time-budget=5000",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True
    )


def assert_renders(page: Path, tmp_path: Path, experiments: int) -> Dom:
    """The page as Chromium rendered it: every image decoded, and a screenshot that shows plots.

    Returns the DOM after load."""
    dom = parse(chromium(page, tmp_path, "--dump-dom").stdout)
    (body,) = dom.all("body")
    assert body.get("data-images") == "ok", body  # set by the page once every <img> decoded
    assert body.get("data-image-count") == str(PLOTS_PER_EXPERIMENT * experiments)

    shot = tmp_path / "screenshot.png"
    chromium(page, tmp_path, "--window-size=1280,1800", f"--screenshot={shot}")
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1280, 1800)
        grey = image.convert("L")
        inked = sum(grey.histogram()[:230]) / (image.width * image.height)
        saturation = image.convert("RGB").convert("HSV").getchannel("S")
        coloured = sum(saturation.histogram()[100:])
    assert inked > 0.02, f"only {inked:.1%} of the screenshot is not white"
    assert coloured > 3000, f"only {coloured} coloured pixels: the plots did not draw"
    return dom


@needs_chromium
def test_a_finished_search_renders_plots_and_trials(finished_run, cli, tmp_path):
    result = cli("report", finished_run)
    page = finished_run / "report.html"
    assert result.code == 0, result.err
    assert result.out.strip() == str(page)

    dom = assert_renders(page, tmp_path, experiments=1)
    (exp,) = results.load(finished_run)
    by_layers = {json.dumps(t.params["layers"]): t for t in exp.trials}
    assert dom.rows() == [t.trial_id for t in exp.ranked()]
    assert dom.rows()[0] == by_layers["[64, 64]"].trial_id
    failed = [t for t in exp.trials if t.status == results.ERRORED]
    early = [t for t in exp.trials if t.stopped_early]
    assert failed == [by_layers["[32, 32]"]] and by_layers["[8]"] in early
    text = dom.joined()
    assert "ValueError: loss diverged at step 3" in text
    assert [a["data-cause"] for a in dom.all("tr") if "data-cause" in a] == ["ValueError"]
    assert text.count("at iteration 3") == len(early)
    assert f"Best: trial {exp.ranked()[0].trial_id}, score =" in text


def test_the_page_embeds_everything_and_keeps_the_pngs_beside_it(finished_run, cli):
    assert cli("report", finished_run).code == 0
    html = (finished_run / "report.html").read_text()
    dom = parse(html)
    images = dom.all("img")
    assert len(images) == PLOTS_PER_EXPERIMENT
    assert all(i["src"].startswith("data:image/png;base64,") for i in images)
    assert not dom.all("link") and all("src" not in s for s in dom.all("script"))
    assert "http://" not in html and "https://" not in html and "url(" not in html
    pngs = sorted((finished_run / "report_files").glob("*.png"))
    assert [p.name for p in pngs] == [
        "steps-best-over-time.png",
        "steps-curves.png",
        "steps-params.png",
    ]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)


@needs_chromium
def test_an_interrupted_run_renders_with_its_problems(cli, tmp_path):
    exp = _experiment(tmp_path / "runs")
    page = tmp_path / "pages" / "interrupted.html"
    result = cli("report", exp, "--out", page)
    assert result.code == 0, result.err
    assert len(list((tmp_path / "pages" / "interrupted_files").glob("*.png"))) == 3

    dom = assert_renders(page, tmp_path, experiments=1)
    assert dom.rows() == ["aaaaa_00001", "aaaaa_00000", "aaaaa_00003", "aaaaa_00002"]
    text = dom.joined()
    assert "This run did not finish" in text
    assert "results.jsonl: line 11 is not whole JSON" in text
    assert "FloatingPointError: loss diverged" in text
    assert "unfinished" in text and "terminated (early)" in text
    assert text.count("at iteration 1") == 1  # aaaaa_00002, stopped by ASHA


def test_user_text_is_escaped(cli, tmp_path):
    exp = _experiment(tmp_path, "e")
    run = json.loads((exp / "run.json").read_text())
    (exp / "run.json").write_text(json.dumps({**run, "experiment": "<i>e</i> & co"}))
    error = next(exp.glob("train_*")) / "error.txt"
    error.write_text(error.read_text().replace("loss diverged", "<script>alert(1)</script>"))
    assert cli("report", exp).code == 0
    html = (exp / "report.html").read_text()
    assert "&lt;i&gt;e&lt;/i&gt; &amp; co" in html and "<i>e</i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


def test_a_folder_that_is_not_a_run_is_one_line_and_writes_nothing(cli, tmp_path):
    result = cli("report", tmp_path)
    lines = result.err.strip().splitlines()
    assert result.code == 2 and len(lines) == 1 and "holds no tune_app run" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_report_never_imports_ray(tmp_path):
    exp = _experiment(tmp_path)
    probe = (
        "import sys; from tune_app.cli import main;"
        f"code = main(['report', {str(exp)!r}]);"
        "print(code, 'ray' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stderr.split()[-2:] == ["0", "False"]
    assert (exp / "report.html").exists()
