"""A folder that holds no tune_app run is refused in one line saying what it holds instead (a
plain Ray Tune experiment, a run stopped before it began, another tool's run.json), alike by
`tune_app.load` and every reader of the command line; a run with a file that could not be read
in full loads with a warning naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tune_app
from tune_app.api import PartlyRead
from tune_app.errors import SpecError

from .conftest import refused


def _empty(folder: Path) -> None:
    folder.mkdir()


def _random_files(folder: Path) -> None:
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    (folder / "blob.bin").write_bytes(bytes(range(256)))
    (folder / "sub").mkdir()
    (folder / "sub" / "result.json").write_text('{"score": 1}\n')


def _foreign_run_json(folder: Path) -> None:
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"name": "other tool", "version": 3}))
    (folder / "results.jsonl").write_text('{"trial_id": "a", "training_iteration": 1}\n')


def _garbage_run_json_below(folder: Path) -> None:
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "run.json").write_bytes(b"\xbd\x00garbage")


def _stopped_before_it_began(folder: Path) -> None:
    folder.mkdir()
    (folder / "spec.yaml").write_text("e: {run: fns:train}\n")


def _tune_experiment(folder: Path) -> None:
    # What plain Ray Tune leaves (its experiment state and Tuner), without the app's run.json.
    (folder / "train_ab12c_00000_0").mkdir(parents=True)
    (folder / "experiment_state-2026-01-01_00-00-00.json").write_text('{"trial_data": []}')
    (folder / "tuner.pkl").write_bytes(b"\x80\x04N.")


def _tune_experiments_below(folder: Path) -> None:
    _tune_experiment(folder / "exp_a")


def _record_lost(folder: Path) -> None:
    # A tune_app run (Tune's state and the app's files) whose run.json was deleted.
    _tune_experiment(folder)
    (folder / "spec.yaml").write_text("e: {run: fns:train}\n")
    (folder / "results.jsonl").write_text('{"trial_id": "a", "training_iteration": 1}\n')
    (folder / "summary.json").write_text(json.dumps({"experiment": "f", "metric": "score"}))


def _record_garbled(folder: Path) -> None:
    _record_lost(folder)
    (folder / "run.json").write_text('{"experiment": "f",\n "metric": \n')


def _records_lost_below(folder: Path) -> None:
    _record_lost(folder / "exp_a")


CASES = [
    pytest.param(_empty, "holds no tune_app run (no run.json", id="empty"),
    pytest.param(_random_files, "holds no tune_app run (no run.json", id="random-files"),
    pytest.param(_foreign_run_json, "run.json is not a tune_app run record", id="foreign-run.json"),
    pytest.param(
        _garbage_run_json_below,
        "holds no tune_app run: the run.json in sub is not a tune_app run record",
        id="garbage-run.json-below",
    ),
    pytest.param(_stopped_before_it_began, "its run was stopped before it began", id="stopped"),
    pytest.param(_tune_experiment, "is a Ray Tune experiment folder", id="ray-tune"),
    pytest.param(_tune_experiments_below, "holds Ray Tune experiment folders (exp_a)", id="tunes"),
    pytest.param(
        _record_lost,
        "is a tune_app run whose record is lost or damaged: run.json is missing; results.jsonl, "
        "summary.json, spec.yaml are there",
        id="run.json-deleted",
    ),
    pytest.param(
        _record_garbled, "run.json is not JSON at line 3, column 1 (Expecting value)", id="garbled"
    ),
    pytest.param(
        _records_lost_below,
        "holds tune_app runs whose run.json is lost or damaged (exp_a: run.json is missing)",
        id="run.json-deleted-below",
    ),
]


@pytest.mark.parametrize(("make", "words"), CASES)
@pytest.mark.parametrize("command", ["analyze", "report", "best"])
def test_load_and_every_reader_refuse_a_folder_that_holds_no_run(
    cli, tmp_path, make, words, command
):
    folder = tmp_path / "f"
    make(folder)
    before = sorted(tmp_path.rglob("*"))
    result = cli(command, folder)
    refused(result, words)
    with pytest.raises(SpecError) as caught:
        tune_app.load(folder)
    assert result.err == f"error: {caught.value}\n"  # the same line as the Python API's
    assert sorted(tmp_path.rglob("*")) == before  # nothing written (no report.html)


def test_the_suggestion_for_a_ray_tune_folder_names_what_reads_it(tmp_path):
    folder = tmp_path / "plain"
    _tune_experiment(folder)
    with pytest.raises(SpecError) as caught:
        tune_app.load(folder)
    assert f"ray.tune.ExperimentAnalysis('{folder.resolve()}')" in str(caught.value)


def test_a_run_with_a_torn_file_loads_with_a_warning_naming_it(tmp_path):
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps({"experiment": "e", "metric": "score", "mode": "max", "searched": ["x"]})
    )
    rows = [
        {"trial_id": "t1", "training_iteration": 1, "score": 1.0, "config": {"x": 1}},
        {"trial_id": "t2", "training_iteration": 1, "score": 2.0, "config": {"x": 2}},
    ]
    (folder / "summary.json").write_text("{not json")
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(PartlyRead, match="summary.json"):
        frame = tune_app.load(folder)
    assert sorted(frame["trial_id"]) == ["t1", "t2"]


@pytest.mark.parametrize("make", [_record_lost, _record_garbled])
def test_a_run_whose_record_is_lost_says_what_still_reads_it(tmp_path, make):
    folder = tmp_path / "f"
    make(folder)
    with pytest.raises(SpecError) as caught:
        tune_app.load(folder)
    said = str(caught.value)
    assert "Ray Tune wrote it" not in said
    record = f"write {folder / 'run.json'} back as "
    assert f"its results are still in {folder / 'results.jsonl'}" in said
    assert "pandas.read_json(" in said  # (a long quoted path is shortened in the message)
    assert record in said
    (folder / "run.json").write_text(said.split(record)[1].split(" (")[0])  # as it says
    frame = tune_app.load(folder)
    assert list(frame["trial_id"]) == ["a"]


@pytest.mark.parametrize("empty", ["", "file://", "local://"])  # the last two read "." too
@pytest.mark.parametrize(
    "command", ["analyze", "report", "best", "evaluate", "resume", "tensorboard"]
)
def test_an_empty_path_is_refused_not_read_as_the_working_directory(cli, command, empty):
    """`analyze "$RUN"` with RUN unset read the working directory's runs."""
    refused(cli(command, empty or (" " if command == "best" else "")), "no run folder given")
    with pytest.raises(SpecError, match="path is empty"):
        tune_app.load(empty)


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("s3://", "s3:// names no bucket: give s3://bucket/prefix"),
        # Read as a local folder named `s3:`: 'holds no tune_app run', or the run there read.
        pytest.param("s3:/b/x", "s3:/b/x is not a URI: did you mean s3://b/x?", id="one-slash"),
    ],
)
@pytest.mark.parametrize("command", ["analyze", "report", "best", "evaluate", "resume"])
def test_a_cloud_uri_naming_no_bucket_is_refused(cli, command, uri, words):
    """`analyze s3://` ended in pyarrow's `ArrowInvalid: Path cannot start with a separator`."""
    refused(cli(command, uri), words)
