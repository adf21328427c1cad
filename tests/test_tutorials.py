"""Every tutorial runs top to bottom: its ```bash blocks, in order, in a fresh folder holding the
files the tutorial uses, with `python` the venv's and the checkout importable; what a tutorial
writes must land in `results/` or `tutorial/` (which git ignores), never loose in the checkout.
A block marked `% not-run: why` on the line before it is shown, not run (a server that runs
until Ctrl-C); `% needs-cluster: why` is run only by tests/test_cluster.py, against a two-node
cluster and a local S3 server; `% exits: N` expects that exit code. A tutorial's spec files may
be shrunk to test budgets, declared here beside the tutorial."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import ROOT, results_of

TUTORIALS = ROOT / "docs/tutorials"
BLOCK = re.compile(
    r"(?:^% (?P<mark>[\w-]+):(?P<arg>[^\n]*)\n)?^```bash\n(?P<body>.*?)^```\n", re.M | re.S
)

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Tutorial:
    page: str
    # File (relative to the run folder) -> (text, replacement): smaller budgets for the test.
    shrink: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # (text, replacement) in the commands run, for the same reason.
    shrink_commands: list[tuple[str, str]] = field(default_factory=list)
    timeout_s: int = 240


def commands(page: Path, cluster: bool = False) -> list[tuple[str, int]]:
    """The tutorial's commands to run, each with the exit code it should end with; with
    `cluster`, those that need a cluster too."""
    found = []
    for m in BLOCK.finditer(page.read_text()):
        if m.group("mark") == "not-run" or (m.group("mark") == "needs-cluster" and not cluster):
            continue
        code = int(m.group("arg")) if m.group("mark") == "exits" else 0
        text = m.group("body").replace("\\\n", " ")
        for line in text.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                found.append((line, code))
    return found


def shrink(tutorial: Tutorial, folder: Path) -> set[str]:
    """The tutorial's files in `folder` shrunk to test size (run after they are copied there):
    the names shrunk."""
    done = set()
    for name, changes in tutorial.shrink.items():
        path = folder / name
        if not path.exists() or path.is_symlink():
            continue
        done.add(name)
        text = path.read_text()
        for old, new in changes:
            assert old in text, f"{name}: {old!r} is no longer there to shrink"
            text = text.replace(old, new)
        path.write_text(text)
    return done


def shell_env() -> dict[str, str]:
    """The environment a tutorial's commands run in: `python` the venv's, the checkout
    importable."""
    bin_dir = Path(sys.executable).parent
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bin_dir}:{os.environ['PATH']}"}


CHECKOUT = ("search_spaces", "trainables", "tests", "docs")
# Where a tutorial may write in the checkout: git ignores both (.gitignore).
WRITES = {"results", "tutorial"}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """One checkout for every tutorial of this module, run one after another (in the module's
    order) as a reader follows them: each tutorial's commands must work after the others' runs,
    in the `results/` they share."""
    folder = tmp_path_factory.mktemp("checkout")
    for name in CHECKOUT:
        (folder / name).symlink_to(ROOT / name)
    (folder / ".venv").mkdir()
    (folder / ".venv/bin").mkdir()
    (folder / ".venv/bin/activate").write_text("")  # the venv is the one running the tests
    return folder


def run_tutorial(tutorial: Tutorial, tmp_path: Path) -> None:
    env = shell_env()
    shrunk: set[str] = set()
    for command, code in commands(TUTORIALS / tutorial.page):
        for old, new in tutorial.shrink_commands:
            command = command.replace(old, new)
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=tutorial.timeout_s,
        )
        assert done.returncode == code, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if command.startswith("cp "):  # the tutorial's files, now in the run folder
            shrunk |= shrink(tutorial, tmp_path)
    assert shrunk == set(tutorial.shrink), "a file to shrink was never copied"
    left = {p.name for p in tmp_path.iterdir()} - {*CHECKOUT, ".venv"} - WRITES
    assert not left, f"{tutorial.page} leaves files in the checkout that git would list: {left}"


def test_first_search(checkout):
    run_tutorial(Tutorial("first-search.md"), checkout)
    assert (checkout / "results/my_experiment/report.html").is_file()
    assert "my_experiment-best" in (checkout / "results/best.yaml").read_text()
    assert (checkout / "results/my_experiment-best/summary.json").is_file()
    rows = (checkout / "results/trials.csv").read_text().splitlines()
    assert len(rows) == 7, rows  # a header and the 6 trials


def test_reading_results_from_python(checkout):
    run_tutorial(Tutorial("python.md"), checkout)
    assert (checkout / "results/from_python/summary.json").is_file()


def test_ci_smoke_searches(checkout):
    from junitparser import JUnitXml

    run_tutorial(Tutorial("ci.md"), checkout)
    smoke = JUnitXml.fromfile(str(checkout / "tutorial/smoke.xml"))
    assert smoke.failures == 0 and smoke.errors == 0 and smoke.tests >= 4
    gate = [c for suite in smoke for c in suite if c.name == "mean_accuracy >= 0.5 (smoke)"]
    assert len(gate) == 1 and not gate[0].result  # checked and met, not skipped
    unmet = JUnitXml.fromfile(str(checkout / "tutorial/unmet.xml"))
    assert unmet.failures == 1, unmet


RLLIB = Tutorial(
    "rllib.md",
    shrink={
        "tutorial/ppo_asha.yaml": [
            ("seeds: 3 ", "seeds: 2 "),
            ("max_t: 40, grace_period: 5", "max_t: 2, grace_period: 1"),
            ("num_samples: 8", "num_samples: 1"),
            ("training_iteration: 40", "training_iteration: 2"),
            ("num_env_runners: 1", "num_env_runners: 0"),
            (
                "train_batch_size_per_learner: 2000",
                "train_batch_size_per_learner: 128\n      minibatch_size: 64\n      num_epochs: 1",
            ),
        ]
    },
    shrink_commands=[("--top 2 --seeds 5", "--top 1 --seeds 1")],
)


def test_tune_an_rllib_algorithm(checkout):
    import json

    run_tutorial(RLLIB, checkout)
    summary = json.loads((checkout / "results/ppo/summary.json").read_text())
    assert len(summary["trials"]) == 2, summary["trials"]
    assert (checkout / "tutorial/ppo_asha-evaluate.yaml").is_file()
    assert (checkout / "results/ppo-best/summary.json").is_file()  # the one configuration


def test_bring_your_own_code(checkout):
    import json

    run_tutorial(Tutorial("own-code.md"), checkout)
    for experiment, trials in (("function", 4), ("class", 3), ("env", 2)):
        summary = json.loads((checkout / f"results/own_code/{experiment}/summary.json").read_text())
        assert len(summary["trials"]) == trials, (experiment, summary["trials"])


def test_keep_and_reload_the_best_model(checkout):
    import json

    run_tutorial(Tutorial("keep-best.md"), checkout)
    summary = json.loads((checkout / "results/digits/summary.json").read_text())
    best = summary["best"]
    assert len(summary["trials"]) == 4 and summary["counts"] == {"TERMINATED": 4}
    # The weights reloaded from the best trial's checkpoint score what the search said they do.
    printed = run_python(checkout, "tutorial/load_best.py")
    assert printed.startswith(f"trial {best['trial_id']}: accuracy {best['metric']:.3f}")
    # Every trial read the one copy of the dataset in the object store.
    rows = results_of(checkout / "results/digits")
    assert len({r["trial_id"] for r in rows}) == 4 and len({r["dataset"] for r in rows}) == 1
    # The conditional space: each optimizer drawn is one of the choices, momentum only for SGD.
    drawn = [t["config"]["optimizer"] for t in summary["trials"]]
    allowed = [{"name": "sgd", "momentum": 0.9}, {"name": "sgd", "momentum": 0.0}, {"name": "adam"}]
    assert all(d in allowed for d in drawn), drawn


def run_python(folder: Path, script: str) -> str:
    done = subprocess.run(
        [sys.executable, script], cwd=folder, env=shell_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_several_objectives(checkout):
    import json

    import yaml

    run_tutorial(Tutorial("objectives.md"), checkout)
    (shown,) = json.loads((checkout / "tutorial/front.json").read_text())
    front = [t for t in shown["trials"] if t["pareto"]]
    assert front and not any(t["broken"] for t in front)
    assert all({"accuracy", "params_k", "pareto"} <= t.keys() for t in shown["trials"])
    (name,) = yaml.safe_load((checkout / "tutorial/most_accurate.yaml").read_text())["experiments"]
    assert name == "small_and_good-best"
    assert (checkout / "results/small_and_good/report_files/small_and_good-pareto.png").is_file()


def test_how_sure_is_the_best(checkout):
    import json

    run_tutorial(Tutorial("judging.md"), checkout)
    seeds = json.loads((checkout / "results/judging/seeds/summary.json").read_text())
    assert seeds["select"] == "lcb" and seeds["best"]["params"]["lr"] == 0.04
    by_mean = max(seeds["configurations"], key=lambda c: c["score"])
    assert by_mean["params"]["lr"] == 0.045  # the mean would have picked the lucky one
    assert all(0 < c["chance_best"] < 1 for c in seeds["configurations"])
    assert "lr: 0.04" in (checkout / "tutorial/best.yaml").read_text()
    asha = json.loads((checkout / "results/judging/asha/summary.json").read_text())
    assert [c["rung"] for c in asha["early_stopping"]] == [4]
    assert "Enough trials?" in (checkout / "results/judging/report.html").read_text()


def test_across_searches(checkout):
    import json

    run_tutorial(Tutorial("across-searches.md"), checkout)
    page = (checkout / "tutorial/compare.html").read_text()
    assert "results/random" in page and "results/tpe" in page
    chance = r"<td>(tpe|random)</td><td>(random|tpe)</td><td class=\"num\">[01]\.\d\d<"
    assert re.search(chance, page), "no probability of improvement on the page"
    run = json.loads((checkout / "results/tpe_more/run.json").read_text())
    (warm,) = run["warm_start"]
    assert warm["trials"] == 18 and warm["run"].endswith("results/tpe")
    more = json.loads((checkout / "results/tpe_more/summary.json").read_text())
    earlier = json.loads((checkout / "results/tpe/summary.json").read_text())
    assert len(more["trials"]) == 18  # its own 6 configurations x 3 seeds, none of the earlier
    assert not {t["trial_id"] for t in more["trials"]} & {t["trial_id"] for t in earlier["trials"]}


def test_every_tutorial_is_run_here_or_says_what_runs_it():
    """A tutorial without a test above has no command left to run: each is marked `not-run`
    with what checks it instead."""
    # cluster.md: tests/test_cluster.py runs it.
    tested = {"first-search.md", "python.md", "ci.md", "own-code.md", "cluster.md", RLLIB.page}
    tested.add("keep-best.md")
    tested.add("objectives.md")
    tested.add("judging.md")
    tested.add("across-searches.md")
    for page in sorted(TUTORIALS.glob("*.md")):
        if page.name not in tested:
            assert commands(page) == [], f"{page.name}: commands no test runs"
