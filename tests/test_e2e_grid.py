"""End to end: `tune_app run search_spaces/grid.yaml`, checked through the files it leaves."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from trainables.my_func import accuracy

from .conftest import SEARCH_SPACES, results_of

GRID = SEARCH_SPACES / "grid.yaml"


def expected_final(alpha: float, beta: float, stop: dict[str, float]) -> tuple[float, int]:
    """mean_accuracy and iterations at which the spec's stop criteria end a my_func trial."""
    it = 0
    while True:
        it += 1
        acc = accuracy(beta * (it - 1), alpha)
        if acc >= stop["mean_accuracy"] or it >= stop["training_iteration"]:
            return acc, it


@pytest.fixture(scope="module")
def grid_run(ray_session, tmp_path_factory):
    from tune_app.cli import main

    out = tmp_path_factory.mktemp("grid")
    code = main(["run", str(GRID), "--storage-path", str(out), "-q"])
    return code, out / "my_experiment"


def test_grid_run_exits_0_with_six_trials(grid_run):
    code, folder = grid_run
    assert code == 0
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 6}
    configs = sorted((t["config"]["alpha"], t["config"]["beta"]) for t in summary["trials"])
    assert configs == [(a, b) for a in (0.2, 0.4, 0.6) for b in (1, 2)]


def test_best_trial_is_the_one_the_math_says(grid_run):
    _, folder = grid_run
    spec = yaml.safe_load(GRID.read_text())["my_experiment"]
    finals = {
        (a, b): expected_final(a, b, spec["stop"])
        for a in spec["config"]["alpha"]["grid_search"]
        for b in spec["config"]["beta"]["grid_search"]
    }
    best_config = max(finals, key=lambda k: finals[k][0])
    summary = json.loads((folder / "summary.json").read_text())
    best = summary["best"]
    assert (best["config"]["alpha"], best["config"]["beta"]) == best_config
    assert best["metric"] == pytest.approx(finals[best_config][0])
    assert best["iterations"] == finals[best_config][1]
    # the named trial's own folder holds that config
    params = json.loads((folder / best["path"] / "params.json").read_text())
    assert (params["alpha"], params["beta"]) == best_config
    for t in summary["trials"]:
        acc, iters = finals[(t["config"]["alpha"], t["config"]["beta"])]
        assert t["metric"] == pytest.approx(acc) and t["iterations"] == iters


def test_every_result_line_parses(grid_run):
    _, folder = grid_run
    trial_dirs = [d for d in folder.iterdir() if d.is_dir()]
    assert len(trial_dirs) == 6
    for d in trial_dirs:
        rows = [json.loads(line) for line in (d / "result.json").read_text().splitlines()]
        assert [r["training_iteration"] for r in rows] == list(range(1, len(rows) + 1))
        assert (d / "progress.csv").exists() and (d / "params.json").exists()


def test_results_jsonl_has_every_result_and_config_once_per_trial(grid_run):
    _, folder = grid_run
    rows = results_of(folder)
    summary = json.loads((folder / "summary.json").read_text())
    by_trial: dict[str, list[dict]] = {}
    for row in rows:
        by_trial.setdefault(row["trial_id"], []).append(row)
    assert set(by_trial) == {t["trial_id"] for t in summary["trials"]}
    for t in summary["trials"]:
        trial_rows = by_trial[t["trial_id"]]
        assert len(trial_rows) == t["iterations"]
        assert trial_rows[0]["config"] == t["config"]
        assert all("config" not in r for r in trial_rows[1:])
        assert trial_rows[-1]["mean_accuracy"] == pytest.approx(t["metric"])


def test_tensorboard_events_hold_the_reported_scalars(grid_run):
    _, folder = grid_run
    for d in (d for d in folder.iterdir() if d.is_dir()):
        reported = [
            json.loads(x)["mean_accuracy"] for x in (d / "result.json").read_text().splitlines()
        ]
        events = EventAccumulator(str(d))
        events.Reload()
        assert "0_spec/mean_accuracy" in events.Tags()["scalars"]  # the spec's metric, first group
        logged = [e.value for e in events.Scalars("0_spec/mean_accuracy")]
        assert logged == pytest.approx(reported, rel=1e-6)


def test_spec_command_and_versions_are_kept(grid_run):
    _, folder = grid_run
    assert (folder / "spec.yaml").read_text() == GRID.read_text()
    run = json.loads((folder / "run.json").read_text())
    assert run["command"][1:3] == ["run", str(GRID)]
    assert run["versions"]["ray"] == "2.60.0"
    assert set(run["versions"]) >= {"python", "torch", "gymnasium", "hyperopt", "tune_app"}


@pytest.mark.slow  # an in-process run: the second tier
def test_a_second_run_writes_beside_the_first_and_is_read_as_the_newest(grid_run, cli, tmp_path):
    _, folder = grid_run
    storage = tmp_path / "again"
    shutil.copytree(folder, storage / folder.name, symlinks=True)  # the module's run stays as is
    first = storage / folder.name
    before = sorted(p.name for p in first.iterdir())
    result = cli("run", GRID, "--storage-path", storage, "-q")
    assert result.code == 0, result.err
    second = storage / f"{folder.name}_2"
    assert sorted(p.name for p in first.iterdir()) == before
    assert len(json.loads((second / "summary.json").read_text())["trials"]) == 6
    read = cli("analyze", first, "--format", "json")
    assert read.code == 0 and json.loads(read.out)[0]["folder"] == str(second)
    assert f"{first}/run.json" in read.err  # how to read the first run


def test_validate_prints_the_plan(cli):
    result = cli("validate", GRID)
    assert result.code == 0
    for words in (
        "my_experiment",
        "my_func",
        "trials     6",
        "grid",
        "fifo",
        "mean_accuracy (max; a trial ranks by its last value, scope last)",
        "at most 300",
    ):
        assert words in result.out
