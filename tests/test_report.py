"""`report` writes one offline HTML page of a run, and it renders in a real headless Chromium:
every plot decodes, the trials table lists the trials best first with failures and early stops,
and the screenshot is not blank. Finished (a real ASHA search) and interrupted runs alike."""

from __future__ import annotations

import json
import math
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tune_app.readback import plots, report
from tune_app.readback.plots import faint as faint_lines
from tune_app.readback.plots import parallel
from tune_app.rundir import read as results
from tune_app.rundir.write import log_scaled
from tune_app.space import parse_space

from . import browser
from .browser import needs_chromium
from .conftest import user_module
from .test_analyze import _experiment

# Learning curves, best over wall time, the trial timeline, parameters against the metric,
# parallel coordinates, the expected best of n trials.
PLOTS_PER_EXPERIMENT = 6

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
    return browser.chromium(page.as_uri(), tmp_path / "chromium-profile", *args)


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
        "steps-expected-best.png",
        "steps-parallel.png",
        "steps-params.png",
        "steps-timeline.png",
    ]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
    (exp,) = results.load(finished_run)
    assert exp.log_scaled == []  # run.json says which parameters are log-scaled: none here


@needs_chromium
def test_an_interrupted_run_renders_with_its_problems(cli, tmp_path):
    exp = _experiment(tmp_path / "runs")
    page = tmp_path / "pages" / "interrupted.html"
    result = cli("report", exp, "--out", page)
    assert result.code == 0, result.err
    pngs = list((tmp_path / "pages" / "interrupted_files").glob("*.png"))
    assert len(pngs) == PLOTS_PER_EXPERIMENT

    dom = assert_renders(page, tmp_path, experiments=1)
    assert dom.rows() == ["aaaaa_00001", "aaaaa_00000", "aaaaa_00002", "aaaaa_00003"]  # failed last
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


# ---- which parameters matter, and figures that stay readable (Ray-free) --------------------------


def write_search(folder: Path, trials, log_scaled=None, steps=3, x_key=None) -> Path:
    """A finished run folder of `trials` (config, score) scored `score`, max: each trial reports
    `steps` results rising to its score; with `x_key`, also RLlib's env steps under that key."""
    folder.mkdir(parents=True)
    searched = sorted({k for config, _ in trials for k in config})
    run = {"experiment": folder.name, "metric": "score", "mode": "max", "searched": searched}
    if log_scaled is not None:
        run["log_scaled"] = log_scaled
    (folder / "run.json").write_text(json.dumps(run))
    rows, journal = [], []
    for i, (config, score) in enumerate(trials):
        trial_id = f"ttttt_{i:05d}"
        for step in range(1, steps + 1):
            row = {
                "trial_id": trial_id,
                "training_iteration": step,
                "score": score * step / steps,
                "logged_at": 100.0 * i + step,
            }
            if x_key == "num_env_steps_sampled_lifetime":
                row[x_key] = 1000 * step
            elif x_key:
                row["env_runners"] = {"num_env_steps_sampled_lifetime": 1000 * step}
            rows.append({**row, "config": config} if step == 1 else row)
        journal.append({"trial_id": trial_id, "status": "TERMINATED"})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))
    return folder


def lr_search(n: int) -> list[tuple[dict, float]]:
    """`n` trials whose score rises with log10(lr) alone; `x` and `act` are noise."""
    trials = []
    for i in range(n):
        lr = 10 ** (-5 + 4 * i / max(n - 1, 1))
        config = {"lr": lr, "x": 0.001 + (i * 7 % n) / n, "act": ["relu", "tanh"][i * 5 % 3 % 2]}
        trials.append(({**config, "seed": i % 3}, 6.0 + math.log10(lr)))
    return trials


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({"lr": {"loguniform": [1e-5, 1e-1]}}, ["lr"], id="loguniform"),
        pytest.param({"lr": {"qloguniform": [1e-4, 1.0, 1e-4]}}, ["lr"], id="qloguniform"),
        pytest.param({"n": {"lograndint": [1, 1000]}}, ["n"], id="lograndint"),
        pytest.param({"n": {"qlograndint": [8, 512, 8]}}, ["n"], id="qlograndint"),
        pytest.param({"x": {"uniform": [0.0001, 1.0]}}, [], id="uniform-over-decades"),
        pytest.param({"n": {"randint": [1, 1000]}}, [], id="randint"),
        pytest.param({"lr": {"grid_search": [1e-4, 1e-3, 1e-2]}}, ["lr"], id="grid-of-decades"),
        pytest.param({"w": {"choice": [16, 32, 64, 128]}}, ["w"], id="choice-of-doublings"),
        pytest.param({"x": {"grid_search": [0.1, 0.5, 0.9]}}, [], id="grid-evenly-spaced"),
        pytest.param({"x": {"grid_search": [1, 50, 100, 200]}}, [], id="grid-roughly-linear"),
        pytest.param({"x": {"grid_search": [0.01, 1]}}, ["x"], id="two-values-100x-apart"),
        pytest.param({"x": {"grid_search": [0, 1, 10]}}, [], id="grid-with-zero"),
        pytest.param({"a": {"choice": ["relu", "tanh"]}}, [], id="categories"),
        pytest.param(
            {"model": {"lr": {"loguniform": [1e-5, 1e-1]}, "w": 3}}, ["model.lr"], id="nested"
        ),
    ],
)
def test_run_json_names_the_parameters_searched_on_a_log_scale(config, expected):
    assert log_scaled(parse_space(config, "config")) == expected


@pytest.mark.parametrize(
    ("logs", "x_scale"),
    [
        pytest.param(["lr"], "linear", id="run.json-says"),
        pytest.param(None, "log", id="older-run:-values-100x-apart"),
    ],
)
def test_a_parameter_searched_on_a_log_scale_gets_a_log_axis(tmp_path, logs, x_scale):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(8), log_scaled=logs))
    fig = plots.params_vs_metric(exp, plots.trial_colors(exp))
    scales = {ax.get_xlabel(): ax.get_xscale() for ax in fig.axes if ax.get_visible()}
    x_label = "x (log)" if x_scale == "log" else "x"
    assert scales == {"act": "linear", "lr (log)": "log", x_label: x_scale}  # no seed

    axes = {a.name: a for a in parallel.parallel_axes(exp, exp.ranked())}
    assert list(axes) == ["act", "lr", "x", "score\n(last value)"]  # no seed
    assert (axes["lr"].scale, axes["x"].scale, axes["act"].scale) == ("log", x_scale, "category")
    # lr runs 1e-5 .. 1e-1 in even log steps, best (highest lr) first: even heights from the top
    assert [round(h, 6) for h in axes["lr"].heights] == [round(1 - i / 7, 6) for i in range(8)]
    assert [label for _, label in axes["lr"].ticks] == ["1e-05", "0.0001", "0.001", "0.01", "0.1"]
    assert [h for h, _ in axes["act"].ticks] == [0.0, 1.0]


def test_each_parameter_plot_draws_every_trial_once_in_its_colour_the_best_in_front(tmp_path):
    """Points of one look share one line of markers (10,000 trials drew 3.5x faster than a
    scatter's): each scored trial is one point at (its value, its score) in its colour, the
    five highlighted above the faint ones."""
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(40)))
    colors = plots.trial_colors(exp)
    fig = plots.params_vs_metric(exp, colors)
    ax = next(a for a in fig.axes if a.get_xlabel() == "lr (log)")
    drawn = sorted(
        (round(float(x), 12), round(float(y), 9), line.get_markeredgecolor(), line.get_zorder())
        for line in ax.get_lines()
        for x, y in line.get_xydata()
    )
    shown = {t.trial_id for t in plots.highlighted(exp)}
    expected = sorted(
        (
            round(t.params["lr"], 12),
            round(t.score, 9),
            colors[t.trial_id],
            3 if t.trial_id in shown else 2,
        )
        for t in exp.ranked()
    )
    assert drawn == expected and len(drawn) == 40


@pytest.mark.parametrize(("n", "shown"), [(12, 12), (13, 5), (40, 5)])
def test_beyond_twelve_trials_only_the_best_five_are_in_colour(tmp_path, n, shown):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(n)))
    best = [t.trial_id for t in exp.ranked()]
    assert [t.trial_id for t in plots.highlighted(exp)] == best[:shown]
    colors = plots.trial_colors(exp)
    faint = [t for t, c in colors.items() if c == plots.FAINT_COLOR]
    assert sorted(faint) == sorted(best[shown:])
    assert len({colors[t] for t in best[:shown]}) == shown  # each highlighted trial its own

    fig = plots.learning_curves(exp, colors)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    others = [f"{n - shown} other trials"] if n > shown else []
    assert labels == [f"{best[0]} (best)", *best[1:shown], *others]
    from matplotlib.colors import to_hex

    ax = fig.axes[0]  # the faint trials in one collection, each highlighted one its own line
    assert sum(len(c.get_segments()) for c in ax.collections) == n - shown
    assert {to_hex(c) for coll in ax.collections for c in coll.get_colors()} <= {plots.FAINT_COLOR}
    assert len([line for line in ax.get_lines() if not line.get_label().startswith("_")]) == shown

    ax = parallel.parallel_coordinates(exp, colors).axes[0]  # alike
    assert sum(len(c.get_segments()) for c in ax.collections) == n - shown
    assert len([line for line in ax.get_lines() if not line.get_label().startswith("_")]) == shown


def test_beyond_max_faint_lines_as_many_are_drawn_spread_over_the_ranks(tmp_path, monkeypatch):
    """A run of many trials draws MAX_FAINT_LINES of its faint ones, the best and the worst
    among them and the rest evenly between, and says so in the legend."""
    monkeypatch.setattr(faint_lines, "MAX_FAINT_LINES", 8)
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(40)))
    colors = plots.trial_colors(exp)
    faint = [t for t in exp.ranked() if colors[t.trial_id] == plots.FAINT_COLOR]
    assert len(faint) == 35
    rank_of_score = {round(t.score, 9): i for i, t in enumerate(faint)}

    fig = plots.learning_curves(exp, colors)
    ax = fig.axes[0]
    segments = [seg for coll in ax.collections for seg in coll.get_segments()]
    ranks = sorted(rank_of_score[round(float(seg[-1][1]), 9)] for seg in segments)
    assert ranks == [0, 5, 10, 15, 19, 24, 29, 34]  # round(i * 34 / 7)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "35 other trials (8 drawn, spread over their ranks)" in labels

    fig = parallel.parallel_coordinates(exp, colors)
    assert sum(len(c.get_segments()) for c in fig.axes[0].collections) == 8
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "35 other trials (8 drawn, spread over their ranks)" in labels


def test_the_end_marks_of_faint_trials_are_those_of_the_lines_drawn(monkeypatch):
    """Past MAX_FAINT_LINES, a faint trial's end mark (failed, stopped early) is drawn only
    where its line is: no mark ends a line that is not there."""
    from matplotlib.figure import Figure

    monkeypatch.setattr(faint_lines, "MAX_FAINT_LINES", 4)
    faint = faint_lines.FaintLines()
    for i in range(10):
        end = ("X" if i % 2 else "v", (1.0, float(i))) if i != 6 else None
        faint.add([(0.0, float(i)), (1.0, float(i))], plots.FAINT_COLOR, i % 2 == 1, end)
    ax = Figure().add_subplot()
    ends = faint.draw(ax, linewidth=0.8, alpha=0.5, zorder=1)
    drawn = sorted(float(seg[-1][1]) for c in ax.collections for seg in c.get_segments())
    assert drawn == [0.0, 3.0, 6.0, 9.0]  # round(i * 9 / 3)
    assert sorted(ends, key=lambda e: e[1][1]) == [
        ("v", (1.0, 0.0)),
        ("X", (1.0, 3.0)),
        ("X", (1.0, 9.0)),
    ]
    styles = {c.get_linestyle()[0][1] is None: len(c.get_segments()) for c in ax.collections}
    assert sum(styles.values()) == 4 and len(ax.collections) == 2  # solid and dashed (failed)


@pytest.mark.parametrize(
    ("x_key", "expected", "label"),
    [
        pytest.param(
            "nested",
            "env_runners/num_env_steps_sampled_lifetime",
            "env steps sampled",
            id="rllib-env-runners",
        ),
        pytest.param(
            "num_env_steps_sampled_lifetime",
            "num_env_steps_sampled_lifetime",
            "env steps sampled",
            id="rllib-top-level",
        ),
        pytest.param(None, "training_iteration", "training iteration", id="not-rllib"),
    ],
)
def test_rllib_learning_curves_run_over_env_steps(tmp_path, x_key, expected, label):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(3), x_key=x_key))
    assert plots.curve_x(exp) == (expected, label)
    ax = plots.learning_curves(exp, plots.trial_colors(exp)).axes[0]
    assert ax.get_xlabel() == label
    steps = [1000, 2000, 3000] if x_key else [1, 2, 3]
    assert all(list(line.get_xdata()) == steps for line in ax.get_lines())


def test_parallel_coordinates_need_two_parameters_besides_the_seed(tmp_path):
    two = results.read_experiment(write_search(tmp_path / "two", lr_search(6), log_scaled=["lr"]))
    fig = parallel.parallel_coordinates(two, plots.trial_colors(two))
    assert fig is not None
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["act", "lr\n(log)", "x", "score\n(last value)"]
    polylines = [line for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 4]
    assert len(polylines) == 6  # one per trial, through the four axes

    trials = [({"lr": config["lr"], "seed": config["seed"]}, s) for config, s in lr_search(6)]
    one = results.read_experiment(write_search(tmp_path / "one", trials))
    assert parallel.parallel_coordinates(one, plots.trial_colors(one)) is None


def test_the_page_says_which_parameters_matter(cli, tmp_path):
    exp = write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"])
    assert cli("report", exp).code == 0
    html = (exp / "report.html").read_text()
    dom = parse(html)
    params = [a["data-param"] for a in dom.all("tr") if "data-param" in a]
    assert params[0] == "lr" and sorted(params) == ["act", "lr", "x"]  # never the seed
    text = dom.joined()
    assert "Which parameters matter" in text and "from the searched parameters of 20" in text
    assert len(dom.all("img")) == PLOTS_PER_EXPERIMENT
    assert (exp / "report_files" / "e-parallel.png").read_bytes().startswith(b"\x89PNG")


def test_too_few_trials_for_importance_is_a_note_not_a_table(tmp_path):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(3)))
    section = report._section(exp, (), "files")
    assert section.importance is not None and section.importance.rows == ()
    assert "Only 3 trials with a score" in section.importance.note
    html = report.render(report.Page("t", "s", "now", (section,)))
    assert "Only 3 trials with a score" in html and "data-param" not in html


def test_a_log_axis_of_a_choice_is_labelled_at_its_values_without_overlap(tmp_path):
    """`hidden: {choice: [16, 32, 64, 128, 256]}` gets a log axis (its values are spaced evenly
    in log) labelled at each value, without matplotlib's minor labels (2x10^1, 3x10^1, ...)
    crowding in between; the caption says what the axis is, not that it was searched on a log
    scale (a choice is not)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    hidden = [16, 32, 64, 128, 256, 16, 64]
    trials = [({"hidden": h, "lr": 0.01 * (i + 1)}, float(i)) for i, h in enumerate(hidden)]
    exp = results.read_experiment(write_search(tmp_path / "e", trials, log_scaled=["hidden"]))
    fig = plots.params_vs_metric(exp, plots.trial_colors(exp))
    assert fig is not None
    FigureCanvasAgg(fig).draw()
    ax = next(a for a in fig.axes if a.get_xlabel() == "hidden (log)")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "32", "64", "128", "256"]
    assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
    captions = [f.caption for f in report._figures(exp)]
    assert not any("searched on a log scale" in c for c in captions), captions


@pytest.mark.parametrize("fails", ["figure", "page"])
def test_a_report_that_cannot_be_written_exits_74_and_leaves_the_earlier_page(
    cli, tmp_path, monkeypatch, fails
):
    """A full disk exited 1 with a raw OSError and left an empty `report_files/` folder: the
    page was written in place."""
    import errno

    exp = _experiment(tmp_path, "e")
    assert cli("report", exp).code == 0
    before = {p.relative_to(exp): p.read_bytes() for p in exp.rglob("report*") if p.is_file()}
    before |= {p.relative_to(exp): p.read_bytes() for p in (exp / "report_files").iterdir()}
    assert (exp / "report_files").is_dir() and len(before) > 1
    from tune_app.readback import report

    def full(where, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(getattr(where, "name", where)))

    # The figures are written with Path.write_bytes, the page through its temporary file.
    if fails == "figure":
        monkeypatch.setattr(Path, "write_bytes", full)
    else:
        monkeypatch.setattr(report, "write_all", full)
    result = cli("report", exp)
    monkeypatch.undo()
    lines = result.err.strip().splitlines()
    assert result.code == 74 and len(lines) == 1, result.err
    assert "No space left on device (errno 28)" in lines[0] and "free space" in lines[0]
    after = {p.relative_to(exp): p.read_bytes() for p in exp.rglob("report*") if p.is_file()}
    after |= {p.relative_to(exp): p.read_bytes() for p in (exp / "report_files").iterdir()}
    assert after == before  # the earlier page and its figures, whole
    assert not [p for p in exp.iterdir() if p.name.startswith(".report")]  # no temporary left


def test_a_new_report_replaces_its_figures_whole(cli, tmp_path):
    exp = _experiment(tmp_path, "e")
    assert cli("report", exp).code == 0
    stale = exp / "report_files" / "stale.png"
    stale.write_bytes(b"old")
    assert cli("report", exp).code == 0
    assert not stale.exists() and any((exp / "report_files").iterdir())


def test_figures_of_a_report_written_before_the_marker_are_replaced(cli, tmp_path):
    """A run's `report_files` from an earlier release holds its PNGs and no marker: the next
    report of the run replaces it as its own; with a file of another kind in it, it is refused."""
    exp = _experiment(tmp_path, "e")
    earlier = exp / "report_files"
    earlier.mkdir()
    (earlier / "curves.png").write_bytes(b"old")
    assert cli("report", exp).code == 0
    assert not (earlier / "curves.png").exists() and any(earlier.iterdir())
    (earlier / report.FIGURES_MARKER).unlink()
    (earlier / "notes.txt").write_text("mine")
    assert cli("report", exp).code == 2 and (earlier / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("theirs", ["folder", "file", "link"])
def test_a_figures_folder_the_app_did_not_write_is_refused_untouched(cli, tmp_path, theirs):
    """`report --out fig.html` replaced a user's `fig_files` whatever it was: a folder lost its
    files, a file became a folder."""
    exp, mine = _experiment(tmp_path, "e"), tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    figures = tmp_path / "fig_files"
    if theirs == "folder":
        mine.rename(figures)
    elif theirs == "file":
        figures.write_text("mine")
    else:
        figures.symlink_to(mine)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = cli("report", exp, "--out", tmp_path / "fig.html")
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert f"--out: {figures} is in the way of the page's figures" in result.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (figures if theirs == "file" else figures / "notes.txt").read_text() == "mine"


def _scheduled_run(folder: Path, scheduler: str, lengths: list[int], clones=()) -> Path:
    """A finished run of trials `t0`, `t1`... under `scheduler`, each reporting its own number
    of iterations (score: trial number + iteration / 10), and PBT's clone records `clones`."""
    folder.mkdir(parents=True)
    run = {"experiment": folder.name, "metric": "score", "mode": "max", "searched": ["x"]}
    (folder / "run.json").write_text(json.dumps({**run, "scheduler": scheduler}))
    rows = [
        {"trial_id": f"t{i}", "training_iteration": step, "score": i + step / 10}
        | ({"config": {"x": i}} if step == 1 else {})
        for i, length in enumerate(lengths)
        for step in range(1, length + 1)
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ends = [{"trial_id": f"t{i}", "status": "TERMINATED"} for i in range(len(lengths))]
    (folder / "finished.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ends))
    (folder / "clones.jsonl").write_text("".join(json.dumps(c) + "\n" for c in clones))
    return folder


def _legend(fig) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_the_curves_show_the_rungs_where_asha_stopped_trials(tmp_path):
    exp = results.read_experiment(_scheduled_run(tmp_path / "e", "asha", [1, 1, 3, 3, 9, 9]))
    fig = plots.learning_curves(exp, plots.trial_colors(exp))
    rungs = [
        line.get_xdata()[0]
        for line in fig.axes[0].get_lines()
        if line.get_color() == plots.marks.RUNG_COLOR
    ]
    assert rungs == [1, 3]
    assert plots.marks.RUNG_LABEL in _legend(fig)
    assert "Dotted lines are the rungs" in plots.marks.caption(exp)

    fifo = results.read_experiment(_scheduled_run(tmp_path / "f", "fifo", [1, 1, 3, 3, 9, 9]))
    fig = plots.learning_curves(fifo, plots.trial_colors(fifo))
    assert plots.marks.RUNG_LABEL not in _legend(fig)
    assert plots.marks.caption(fifo) == ""


def test_the_curves_mark_where_pbt_copied_a_trial(tmp_path):
    clone = {"trial_id": "t0", "from_trial": "t2", "iteration": 4, "from_iteration": 3}
    exp = results.read_experiment(_scheduled_run(tmp_path / "e", "pbt", [6, 6, 6], [clone]))
    fig = plots.learning_curves(exp, plots.trial_colors(exp))
    (diamonds,) = [
        line
        for line in fig.axes[0].get_lines()
        if line.get_marker() == "D" and line.get_xdata().size  # not the legend's proxy
    ]
    assert list(zip(diamonds.get_xdata(), diamonds.get_ydata(), strict=True)) == [(4.0, 0.4)]
    assert plots.marks.EXPLOIT_LABEL in _legend(fig)
    assert "PBT's exploit" in plots.marks.caption(exp)


def test_an_exploit_is_drawn_where_the_copying_trials_curve_was():
    steps = [{"training_iteration": i, "score": s} for i, s in [(1, 0.1), (2, None), (5, 0.5)]]
    assert plots.marks.at_iteration(steps, 3, "training_iteration", "score") == (1.0, 0.1)
    assert plots.marks.at_iteration(steps, 5, "training_iteration", "score") == (5.0, 0.5)
    assert plots.marks.at_iteration(steps, 0, "training_iteration", "score") is None


def test_links_planted_in_the_run_folder_are_not_written_through(cli, tmp_path):
    """A run folder received from someone may hold links where the report writes its temporary
    page and figures: the page and figures land in the folder, the files the links name stay."""
    exp = _experiment(tmp_path, "e")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important.txt").write_text("precious")
    (exp / ".report.html.tmp").symlink_to(victim / "important.txt")
    (exp / ".report_files.tmp").symlink_to(victim)
    assert cli("report", exp).code == 0
    assert (victim / "important.txt").read_text() == "precious"
    assert sorted(p.name for p in victim.iterdir()) == ["important.txt"]
    page = exp / "report.html"
    assert page.is_file() and not page.is_symlink() and "<html" in page.read_text()
    figures = exp / "report_files"
    assert figures.is_dir() and not figures.is_symlink() and any(figures.glob("*.png"))
    # The link moved aside is removed, not left to block the next report's swap.
    (exp / ".report_files.old").write_text("a file in the way")
    assert cli("report", exp).code == 0 and any(figures.glob("*.png"))
    assert sorted(p.name for p in victim.iterdir()) == ["important.txt"]
