"""The best trial's checkpoint, found from the run folder alone: `tune_app.best_checkpoint` and
`best --format checkpoint` name the newest checkpoint of the trial every reader calls best."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tune_app
from tune_app.errors import SpecError
from tune_app.objectives import Limit, Objective
from tune_app.rundir.records import ERRORED, FINISHED, RunRecord, RunSummary, TrialOutcome

from .conftest import refused


def _run(folder: Path, checkpoints: dict[str, list[int]]) -> Path:
    """An experiment folder of three trials (`b` scores best, `c` failed after scoring more),
    each trial folder holding the numbered checkpoints given."""
    trials = []
    for i, (name, score, status) in enumerate(
        [("a", 0.5, FINISHED), ("b", 0.9, FINISHED), ("c", 0.95, ERRORED)]
    ):
        trial_id = f"aaaaa_{i:05d}"
        trial_folder = f"Net_{trial_id}_{i}_width={i}_2026-01-01_00-00-00"
        for n in checkpoints.get(name, []):
            (folder / trial_folder / f"checkpoint_{n:06d}").mkdir(parents=True)
        (folder / trial_folder).mkdir(parents=True, exist_ok=True)
        trials.append(
            TrialOutcome(
                trial_id=trial_id,
                status=status,
                config={"width": i},
                score=score,
                iterations=3,
                folder=trial_folder,
                params={"width": i},
                cause="ValueError" if status == ERRORED else None,
            )  # fmt: skip
        )
    summary = RunSummary("net", "acc", "max", 1.0, trials=trials)
    record = RunRecord(experiment="net", metric="acc", mode="max", searched=("width",))
    (folder / "summary.json").write_text(json.dumps(summary.to_json()))
    (folder / "run.json").write_text(json.dumps(record.to_json()))
    spec = "net:\n  run: my_func\n  config: {width: {grid_search: [0, 1, 2]}}\n"
    (folder / "spec.yaml").write_text(spec)
    return folder


def test_the_best_trials_newest_checkpoint_and_its_config(tmp_path):
    folder = _run(tmp_path / "net", {"a": [0], "b": [0, 2, 10], "c": [0]})
    best = tune_app.best_checkpoint(folder)
    assert (best.experiment, best.trial_id, best.score) == ("net", "aaaaa_00001", 0.9)
    assert best.path.name == "checkpoint_000010" and best.path.parent.parent == folder
    assert best.config == {"width": 1}


def test_best_prints_the_same_folder(tmp_path, cli):
    folder = _run(tmp_path / "net", {"b": [0, 1]})
    done = cli("best", str(folder), "--format", "checkpoint")
    assert done.code == 0 and done.out.strip() == str(tune_app.best_checkpoint(folder).path)
    header = cli("best", str(folder)).out.splitlines()[1]
    assert header.endswith("checkpoint_000001"), header


def test_a_best_trial_without_checkpoint_is_one_line_saying_how_to_keep_one(tmp_path, cli):
    folder = _run(tmp_path / "net", {"a": [0]})
    with pytest.raises(SpecError, match="best trial aaaaa_00001 kept no checkpoint") as err:
        tune_app.best_checkpoint(folder)
    line = refused(cli("best", str(folder), "--format", "checkpoint"), "kept no checkpoint")
    for said in (str(err.value), line):  # the fix of a class and of a function, both
        assert "checkpoint_at_end: true" in said and "tune.report(metrics, checkpoint=" in said


def test_a_folder_of_several_experiments_asks_for_one(tmp_path):
    _run(tmp_path / "one", {"b": [0]})
    _run(tmp_path / "two", {"b": [0]})
    with pytest.raises(SpecError, match="holds 2 experiments"):
        tune_app.best_checkpoint(tmp_path)


def _front_run(folder: Path) -> Path:
    """A search of two objectives (acc up, mem down, mem at most 2500): `small` and `large` on
    the front, `huge` more accurate still but over the memory bound; each with checkpoints."""
    trials = []
    for i, (name, acc, mem, broken) in enumerate(
        [("small", 0.5, 1000, []), ("large", 0.9, 2000, []), ("huge", 0.95, 3000, ["mem"])]
    ):
        trial_folder = f"Net_{name}_{i}"
        (folder / trial_folder / "checkpoint_000001").mkdir(parents=True)
        trials.append(
            TrialOutcome(
                trial_id=name,
                status=FINISHED,
                config={"width": i},
                score=None,
                iterations=1,
                folder=trial_folder,
                params={"width": i},
                objectives={"acc": acc, "mem": mem},
                broken=broken,
            )
        )
    two = [Objective("acc", "max"), Objective("mem", "min")]
    summary = RunSummary(
        "net", None, None, 1.0, trials=trials, objectives=two, constraints=[Limit("mem", max=2500)]
    )
    limits = tuple(summary.constraints)
    record = RunRecord(
        experiment="net", searched=("width",), objectives=tuple(two), constraints=limits
    )
    (folder / "summary.json").write_text(json.dumps(summary.to_json()))
    (folder / "run.json").write_text(json.dumps(record.to_json()))
    (folder / "spec.yaml").write_text(
        "metric: [acc, mem]\nmode: [max, min]\nconstraints: {mem: {max: 2500}}\n"
        "experiments:\n  net:\n    run: my_func\n    config: {width: {grid_search: [0, 1, 2]}}\n"
    )
    return folder


def test_a_search_of_several_objectives_gives_the_point_pick_names(tmp_path):
    """Its answer is a front, not one best: without `pick` it says so (not "no trial has a
    score"), with one it gives that point's checkpoint, as `best --pick` exports it."""
    folder = _front_run(tmp_path / "net")
    with pytest.raises(SpecError) as err:
        tune_app.best_checkpoint(folder)
    said = str(err.value)
    assert "searched several objectives (acc, mem)" in said and "Pareto front" in said
    assert "has a score" not in said and err.value.path == "pick"
    assert tune_app.best_checkpoint(folder, pick="acc").trial_id == "large"  # huge broke mem
    picked = tune_app.best_checkpoint(folder, pick="mem")
    assert picked.trial_id == "small" and picked.path == folder / "Net_small_0/checkpoint_000001"
    assert tune_app.best_checkpoint(folder, pick="large").config == {"width": 1}
    with pytest.raises(SpecError, match="'huge' is not on the front .it broke a constraint"):
        tune_app.best_checkpoint(folder, pick="huge")


def test_pick_on_a_run_of_one_metric_is_refused(tmp_path):
    folder = _run(tmp_path / "net", {"b": [0]})
    with pytest.raises(SpecError, match="optimised one metric .acc."):
        tune_app.best_checkpoint(folder, pick="acc")
