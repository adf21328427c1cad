"""The run folder has one owner: `tune_app.rundir`. No other module names a file inside a run
folder or takes a path or URI apart; `RunLocation` answers those questions, and `RunRecord` is
run.json as written and as read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tune_app.rundir import layout
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import RunRecord

FILE_NAMES = [
    getattr(layout, name) for name in dir(layout) if name.endswith(("_FILE", "_DB", "_STATE"))
]
NAMING = re.compile(
    "|".join(
        [
            *(re.escape(f'"{n}"') for n in FILE_NAMES),
            *(rf"\b{name}\b" for name in dir(layout) if name.endswith(("_FILE", "_DB", "_STATE"))),
            r"experiment_state-",
            r"rsplit\(\"/\"",
            r"\"://\"",
        ]
    )
)


def _app_modules():
    for path in sorted((ROOT / "tune_app").rglob("*.py")):
        if "rundir" not in path.relative_to(ROOT / "tune_app").parts:
            yield path


def test_no_module_outside_rundir_names_a_run_folder_file_or_splits_a_uri():
    assert len(FILE_NAMES) >= 8  # results, summary, run, finished, spec, clones, optuna, tuner
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _app_modules()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if NAMING.search(line) and not line.lstrip().startswith("#") and "$ref" not in line
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("storage", "smoke", "where", "parent"),
    [
        pytest.param("/r", False, "/r/e", "/r", id="local"),
        pytest.param("/r", True, "/r/smoke/e", "/r/smoke", id="local-smoke"),
        pytest.param("s3://b/p/", False, "s3://b/p/e", "s3://b/p", id="cloud"),
        pytest.param("s3://b/p", True, "s3://b/p/smoke/e", "s3://b/p/smoke", id="cloud-smoke"),
    ],
)
def test_a_location_knows_its_folder_parent_and_storage_path(storage, smoke, where, parent):
    loc = RunLocation.for_experiment(storage, "e", smoke=smoke)
    assert (loc.where, loc.parent, loc.name) == (where, parent, "e")
    assert loc.storage_path(smoke) == storage.rstrip("/")
    again = RunLocation.for_experiment(loc.storage_path(smoke), "e", smoke=smoke)
    assert again.same_as(loc)
    if loc.uri:  # the app's files are staged locally, outside the storage path
        assert not str(loc.local).startswith(storage) and loc.results.parent == loc.local


def test_a_relative_storage_path_is_the_same_folder_as_its_resolved_spelling(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = RunLocation.for_experiment("results", "e")
    assert relative.local == tmp_path / "results" / "e"
    assert relative.same_as(RunLocation(Path(tmp_path / "results" / "." / "e")))


def test_what_a_folder_holds(tmp_path):
    loc = RunLocation(tmp_path / "e")
    assert not loc.started and not loc.holds_files() and not loc.has_tune_state()
    loc.create()
    loc.record.write_text("{}")
    loc.spec.write_text("e: {run: x}\n")
    assert loc.started and loc.holds_files() and loc.holds_only_records()
    assert not loc.tune_started()
    loc.results.write_text('{"trial_id": "a"}\n')
    assert loc.tune_started() and not loc.holds_only_records()
    with pytest.raises(FileExistsError):
        loc.create()  # one run per local folder


def test_run_json_is_written_and_read_as_one_record():
    record = RunRecord(
        experiment="e",
        spec_file="/s.yaml",
        smoke=True,
        trainable="quadratic",
        metric="score",
        mode="max",
        seeds=(0, 1),
        searched=("x",),
        log_scaled=("lr",),
        stop={"training_iteration": 3},
        command=("tune_app", "run"),
    )
    import json

    assert RunRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    # An older run.json: fields it lacks read as not recorded; unknown ones are ignored.
    old = RunRecord.from_json({"experiment": "e", "metric": "loss", "extra": 1, "stop": None})
    assert (old.metric, old.mode, old.log_scaled, old.stop) == ("loss", None, None, {})
