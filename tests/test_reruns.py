"""A second run of a spec writes beside the first, never into it: `<name>_2`, `<name>_3`, ...
The reading commands and `resume`, given an experiment's folder, find its newest run (the newest
unfinished one for `resume`); given a run's run.json, exactly that run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tune_app.rundir.finding import find_runs, newest_of_each, run_number
from tune_app.rundir.location import RunLocation

from .conftest import refused

GOOD = "e:\n  run: my_func\n  stop: {training_iteration: 2}\n  config: {alpha: 0.5, beta: 1}\n"


def _run(folder: Path, experiment: str | None = None, *, finished: bool = True) -> Path:
    """A run folder as a run leaves it: its records, a result, Tune's state and a summary."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"experiment": experiment or folder.name}))
    (folder / "spec.yaml").write_text(GOOD)
    (folder / "results.jsonl").write_text('{"trial_id": "a", "training_iteration": 1}\n')
    (folder / "tuner.pkl").write_bytes(b"\x80\x04N.")  # None, pickled
    (folder / "experiment_state-x.json").write_text('{"trial_data": []}')
    (folder / "summary.json").write_text(json.dumps({"interrupted": not finished}))
    return folder


@pytest.mark.parametrize(
    ("name", "base", "number"),
    [
        pytest.param("e", "e", 1, id="the-first"),
        pytest.param("e_2", "e", 2, id="the-second"),
        pytest.param("e_12", "e", 12, id="two-digits"),
        pytest.param("e_1", "e", None, id="no-run-1-suffix"),
        pytest.param("e_x", "e", None, id="not-a-number"),
        pytest.param("f_2", "e", None, id="another-experiment"),
        pytest.param("my_exp_3", "my_exp", 3, id="underscores-in-the-name"),
    ],
)
def test_a_folder_name_says_which_run_it_is(name, base, number):
    assert run_number(name, base) == number


def test_a_new_run_writes_beside_every_earlier_one(tmp_path):
    first = RunLocation(tmp_path / "e")
    assert first.fresh() == first  # nothing there yet
    _run(first.local)
    assert first.fresh().local == tmp_path / "e_2"
    _run(tmp_path / "e_2", "e", finished=False)  # unfinished runs are kept too
    assert first.fresh().local == tmp_path / "e_3"
    assert (first.local / "summary.json").exists()  # nothing of the first was touched


def test_a_kept_run_is_not_given_the_folder_another_experiment_of_the_spec_writes(tmp_path):
    """Experiments `x` and `x_2` of one spec, `x` holding a run: `x` was given `x_2` too, and
    the run refused itself, the folder held by its own lock."""
    x, x_2 = RunLocation(tmp_path / "x"), RunLocation(tmp_path / "x_2")
    _run(x.local)
    assert [f.local.name for f in RunLocation.fresh_all([x, x_2])] == ["x_3", "x_2"]
    assert [f.local.name for f in RunLocation.fresh_all([x_2, x])] == ["x_2", "x_3"]


def test_experiments_whose_folders_hold_one_another_are_refused(write_spec, cli, tmp_path):
    """`a` in /r/b and `b` in /r: validate passed, every run refused itself as a rerun."""
    out = tmp_path / "r"
    spec = write_spec(
        f"a:\n  run: my_func\n  storage_path: {out / 'b'}\n  config: {{alpha: 0.5, beta: 1}}\n"
        f"b:\n  run: my_func\n  storage_path: {out}\n  config: {{alpha: 0.5, beta: 1}}\n"
    )
    for command in ("validate", "run"):
        result = cli(command, spec)
        refused(result, "a.storage_path", "inside experiment 'b''s run folder")
    assert not out.exists()


def test_a_folder_nothing_ran_in_is_taken_and_a_held_one_is_not(tmp_path):
    killed = RunLocation(tmp_path / "e")
    killed.create()  # a driver killed before Tune started leaves its records only
    killed.record.write_text("{}")
    killed.spec.write_text(GOOD)
    assert killed.fresh() == killed
    held = RunLocation(tmp_path / "f")
    held.lock_file.write_text("{}")  # a run holds it and has not written yet
    assert held.fresh().local == tmp_path / "f_2"


def test_a_cloud_folder_that_holds_a_run_gets_a_numbered_sibling(monkeypatch):
    from tune_app.rundir import storage

    written = {("s3://b/p/e", "run.json")}
    monkeypatch.setattr(storage, "has_file", lambda uri, name: (uri, name) in written)
    loc = RunLocation.for_experiment("s3://b/p", "e")
    fresh = loc.fresh()
    assert fresh.uri == "s3://b/p/e_2" and fresh.local == storage.staging_dir("s3://b/p/e_2")


def test_an_experiments_folder_reads_as_its_newest_run(tmp_path, capsys):
    _run(tmp_path / "e")
    _run(tmp_path / "e_2", "e")
    _run(tmp_path / "e_10", "e")
    assert find_runs(tmp_path / "e") == ([tmp_path / "e_10"], [tmp_path / "e", tmp_path / "e_2"])
    assert find_runs(tmp_path / "e_2")[0] == [tmp_path / "e_10"]
    assert find_runs(tmp_path / "e" / "run.json") == ([tmp_path / "e"], [])  # exactly that run
    (read,) = RunLocation.open(tmp_path / "e")
    assert read.local == tmp_path / "e_10"
    note = capsys.readouterr().err
    assert note.count("\n") == 1 and str(tmp_path / "e_10") in note
    assert f"{tmp_path / 'e_2'}/run.json" in note  # how to read another


def test_a_storage_folder_reads_the_newest_run_of_each_experiment(tmp_path):
    _run(tmp_path / "e")
    _run(tmp_path / "e_2", "e")
    _run(tmp_path / "f")
    _run(tmp_path / "f_2")  # an experiment of its own named f_2, not a re-run of f
    runs, passed = find_runs(tmp_path)
    assert runs == [tmp_path / n for n in ("e_2", "f", "f_2")] and passed == [tmp_path / "e"]
    assert find_runs(tmp_path / "f")[0] == [tmp_path / "f"]
    every, _ = find_runs(tmp_path, every=True)
    assert every == [tmp_path / n for n in ("e", "e_2", "f", "f_2")]


def test_resume_finds_the_newest_unfinished_run(tmp_path, capsys):
    _run(tmp_path / "e", finished=False)
    _run(tmp_path / "e_2", "e")  # a later run that finished
    (found,) = RunLocation.open(tmp_path / "e", resuming=True)
    assert found.local == tmp_path / "e"
    assert f"reading {tmp_path / 'e'}, the newest unfinished run;" in capsys.readouterr().err
    (found,) = RunLocation.open(tmp_path / "e")  # the reading commands: the newest
    assert found.local == tmp_path / "e_2"
    _run(tmp_path / "f")
    _run(tmp_path / "f_2", "f")
    capsys.readouterr()
    (found,) = RunLocation.open(tmp_path / "f", resuming=True)  # both finished
    assert found.local == tmp_path / "f_2"
    assert ", the newest run (none is unfinished);" in capsys.readouterr().err


def test_newest_of_each_keeps_families_apart():
    runs = {"e": "e", "e_2": "e", "e_3": "e", "g_2": "g_2"}
    assert newest_of_each(runs) == {"e_3": ["e", "e_2"], "g_2": []}
    assert newest_of_each(runs, lambda name: name == "e_2") == {"e_2": ["e", "e_3"], "g_2": []}


def test_resume_continues_a_numbered_run_as_its_experiment(tmp_path, write_spec):
    from tune_app.resuming import resume_plan

    spec_file = write_spec(GOOD)
    _run(tmp_path / "out" / "e")
    later = _run(tmp_path / "out" / "e_2", "e", finished=False)
    (later / "run.json").write_text(json.dumps({"experiment": "e", "spec_file": str(spec_file)}))
    (later / "spec.yaml").write_text(Path(spec_file).read_text())
    (ep,) = resume_plan(tmp_path / "out" / "e").experiments
    assert ep.name == "e" and ep.folder.local == later


@pytest.mark.parametrize(
    ("named", "spec_as_run"),
    [
        pytest.param("/dev/zero", GOOD, id="run-json-names-a-device"),  # read until the OOM
        pytest.param("FOLDER", GOOD, id="run-json-names-a-folder"),  # IsADirectoryError
        pytest.param("SPEC", b"e: \xff\xfe\n", id="spec-as-run-not-utf-8"),  # UnicodeDecodeError
    ],
)
def test_resume_of_a_damaged_run_folder_is_refused_in_one_line(
    cli, write_spec, tmp_path, named, spec_as_run
):
    spec_file = write_spec(GOOD)
    later = _run(tmp_path / "out" / "e", finished=False)
    named = {"FOLDER": str(tmp_path), "SPEC": str(spec_file)}.get(named, named)
    (later / "run.json").write_text(json.dumps({"experiment": "e", "spec_file": named}))
    if isinstance(spec_as_run, bytes):
        (later / "spec.yaml").write_bytes(spec_as_run)
    result = cli("resume", later)
    if isinstance(spec_as_run, bytes):
        refused(result, "the spec as run (spec.yaml) cannot be read")
    else:  # what run.json names reads as missing: the spec changed, shown as a diff
        assert result.code == 2 and "Traceback" not in result.err, result.err
        assert result.err.startswith(f"error: {named} changed since the run:"), result.err
        assert f"+++ {named} (missing)" in result.err


class _Said(Exception):
    """Raised from `on_plan` with what `run` says once planned: the run ends there, before Ray."""


def _say(plan) -> None:
    from tune_app.cli.console import results_line

    raise _Said(results_line(plan))


def test_run_and_validate_say_where_a_rerun_writes(cli, write_spec, tmp_path):
    import tune_app

    spec_file = write_spec(GOOD)
    earlier = _run(tmp_path / "out" / "e", finished=False)
    with pytest.raises(_Said) as said:
        tune_app.run(spec_file, storage_path=tmp_path / "out", on_plan=_say)
    line = str(said.value)
    assert line.startswith(f"tune_app: results in {tmp_path / 'out' / 'e_2'} (earlier runs kept in")
    assert str(earlier) in line
    result = cli("validate", spec_file, "--storage-path", tmp_path / "out")
    assert result.code == 0
    written = tmp_path / "out" / "e_2"
    assert f"e.storage_path: {earlier} already holds a run, kept: `run` writes {written}" in (
        result.err
    )
    assert f"python -m tune_app resume {earlier}" in result.err
    # the plan's own line says the same folder, not the earlier run's
    assert f"  results    {written} (a run writes there: {earlier} holds" in result.out


def _scored(folder: Path) -> Path:
    """A finished run of `net` (es_cartpole over lr) as a run leaves it: its records, the
    results, a summary ranking its two trials (`b` best) and `b`'s checkpoint."""
    from tune_app.rundir.records import FINISHED, RunRecord, RunSummary, TrialOutcome

    folder.mkdir()
    trials = []
    for i, lr in enumerate([0.01, 0.1]):
        trial_folder = f"es_bbbbb_0000{i}_{i}_lr={lr}"
        (folder / trial_folder / "checkpoint_000001").mkdir(parents=True)
        trials.append(
            TrialOutcome(
                f"bbbbb_0000{i}",
                FINISHED,
                {"lr": lr},
                10.0 * (i + 1),
                2,
                trial_folder,
                params={"lr": lr},
            )  # fmt: skip
        )
    record = RunRecord(experiment="net", metric="acc", mode="max", searched=("lr",))
    (folder / "run.json").write_text(json.dumps(record.to_json()))
    summary = RunSummary("net", "acc", "max", 1.0, trials=trials)
    (folder / "summary.json").write_text(json.dumps(summary.to_json()))
    (folder / "results.jsonl").write_text('{"trial_id": "bbbbb_00000", "training_iteration": 1}\n')
    spec = "metric: acc\nmode: max\nexperiments:\n  net:\n    run: es_cartpole\n"
    (folder / "spec.yaml").write_text(spec + "    config: {lr: {grid_search: [0.01, 0.1]}}\n")
    return folder


def _refused_before_any_trial(folder: Path) -> None:
    """A later run refused before any trial reported, as an older version left it: its records
    and Tune's state of pending trials, no result."""
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"experiment": "net", "metric": "acc"}))
    (folder / "spec.yaml").write_text((folder.parent / "net" / "spec.yaml").read_text())
    (folder / "experiment_state-2026-01-02_00-00-00.json").write_text('{"trial_data": []}')


def _ended_by_a_metric_never_reported(folder: Path) -> None:
    """A later run whose metric was misspelt: its trials reported, then the search was ended
    (exit 2): results there, nothing ranked."""
    _refused_before_any_trial(folder)
    (folder / "results.jsonl").write_text('{"trial_id": "z", "training_iteration": 1}\n')
    summary = {"experiment": "net", "metric": "acx", "mode": "max", "wall_time_s": 1.0}
    summary |= {"trials": [{"trial_id": "z", "status": "TERMINATED"}], "missing": {"metric": "acx"}}
    (folder / "summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize(
    ("make", "why", "state"),
    [
        pytest.param(_refused_before_any_trial, "no trial reported", "no trials", id="refused"),
        pytest.param(
            _ended_by_a_metric_never_reported,
            "ended early: 'acx' was never reported",
            "ended early: 'acx' was never reported",
            id="metric-typo",
        ),
    ],
)
def test_every_reader_reads_the_run_that_ran_trials_and_names_the_later_one(
    cli, capsys, tmp_path, monkeypatch, make, why, state
):
    import importlib

    import tune_app
    from tune_app import api

    finished = _scored(tmp_path / "net")
    later = tmp_path / "net_2"
    make(later)
    line = (
        f"tune_app: reading {finished}, the newest run that ran trials; also there: {later} "
        f"({why}) (give a run's run.json, e.g. {later}/run.json, to read exactly that run)\n"
    )

    # Given either folder of the experiment, each reader reads the finished run and says so.
    analyzed = cli("analyze", later)
    assert analyzed.code == 0 and analyzed.err == line
    assert "net: acc (max, ranked by last value); 2 terminated; finished" in analyzed.out
    exactly = cli("analyze", later / "run.json")  # the later run itself, said as what it is
    title = " ".join(exactly.out.split())  # the table's title folds at the terminal's width
    assert exactly.err == "" and state in title and "; finished" not in title
    best = cli("best", finished)
    assert best.code == 0 and best.err == line
    assert best.out.startswith(f"# The best configurations of {finished}, as found by")
    page = tmp_path / "page.html"
    reported = cli("report", later, "--out", page)
    assert reported.code == 0 and reported.err == line
    assert "<title>tune_app report: net</title>" in page.read_text()
    assert f"<code>{finished}</code>" in page.read_text() and str(later) not in page.read_text()

    asked = {}

    def run(spec_file, *, storage_path, address, verbosity, command, on_plan):  # before Ray
        asked.update(spec=Path(spec_file).read_text(), storage=storage_path, address=address)
        raise tune_app.SpecError("stopped here")

    monkeypatch.setattr(api, "run", run)
    monkeypatch.chdir(tmp_path)  # run.json names no spec file: evaluate's spec goes to ./
    evaluated = cli("evaluate", later, "--address", "10.0.0.1:6379")
    assert evaluated.err.startswith(line) and evaluated.err.count("tune_app: reading") == 1
    assert asked["address"] == "10.0.0.1:6379"  # evaluate runs on the cluster named, as run
    assert f"# The best configurations of {finished}, as found by" in asked["spec"]
    assert asked["storage"] == str(tmp_path)

    served = {}

    class Board:  # TensorBoard's program, stopped at launch
        def __init__(self, **_):
            pass

        def configure(self, logdir, **_):
            served["logdir"] = logdir

        def launch(self):
            raise program.TensorBoardServerException("stopped here")  # before serving

    program = importlib.import_module("tensorboard.program")  # not the package's lazy proxy
    monkeypatch.setattr(program, "TensorBoard", Board)
    boarded = cli("tensorboard", later, "--port", "0")
    assert boarded.err.startswith(line) and served["logdir"] == str(finished)

    assert tune_app.best_checkpoint(later).path.parent.parent == finished
    assert capsys.readouterr().err == line
    (read,) = tune_app.read(later)
    assert read.folder == finished and capsys.readouterr().err == line
    assert sorted(tune_app.load(later)["trial_id"]) == ["bbbbb_00000", "bbbbb_00001"]
    assert capsys.readouterr().err == line
