"""`analyze` reads a run from its files alone: sorted trials, the best, failures by cause, and
files cut short by a killed run reported and skipped, never a crash. (Real finished and
interrupted runs are analyzed in test_failures.py and test_resume.py.)"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

import pytest

from .conftest import refused, user_module

_FAILED = "train_aaaaa_00003_3_lr=0.4_2026-01-01_00-00-00"  # the failed trial's folder


def _experiment(folder, name="e", torn=True):
    """A run folder as a killed run leaves it: no summary.json, a torn last line, a trial that
    errored (error.txt), one still running and one stopped early by ASHA."""
    exp = folder / name
    exp.mkdir(parents=True)
    run = {
        "experiment": name,
        "metric": "score",
        "mode": "max",
        "scope": "all",  # ranked by the best value ever reported
        "searched": ["lr", "model.layers"],
        "scheduler": "asha",
        "stop": {"training_iteration": 4},
    }
    (exp / "run.json").write_text(json.dumps(run))
    rows = []
    for trial, lr, scores in [
        ("aaaaa_00000", 0.1, [1.0, 2.0, 3.0, 4.0]),
        ("aaaaa_00001", 0.2, [5.0, 7.0, 6.0]),  # running when killed
        ("aaaaa_00002", 0.3, [0.5]),  # stopped early
        ("aaaaa_00003", 0.4, [2.0, 2.5]),  # errored
    ]:
        for i, score in enumerate(scores, 1):
            row = {"trial_id": trial, "training_iteration": i, "score": score, "logged_at": i}
            if i == 1:
                row["config"] = {"lr": lr, "model": {"layers": [16, 16]}, "seed": 0}
            rows.append(json.dumps(row))
    text = "\n".join(rows) + "\n"
    if torn:
        text += '{"trial_id": "aaaaa_00001", "training_iteration": 4, "sco'
    (exp / "results.jsonl").write_text(text)
    journal = [
        {"trial_id": "aaaaa_00000", "status": "TERMINATED"},
        {"trial_id": "aaaaa_00002", "status": "TERMINATED"},
        {"trial_id": "aaaaa_00003", "status": "ERROR"},
    ]
    (exp / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))
    trial_dir = exp / _FAILED
    trial_dir.mkdir()
    (trial_dir / "error.txt").write_text(
        "Failure # 1 (occurred at 2026-01-01_00-00-05)\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in train\n'
        "    raise FloatingPointError('loss diverged')\n"
        "FloatingPointError: loss diverged\n"
    )
    return exp


def test_partial_files_are_reported_and_the_rest_is_read(cli, tmp_path):
    exp = _experiment(tmp_path)
    (exp / "summary.json").write_text('{"experiment": "e", "trials": [')  # cut short
    result = cli("analyze", exp, "--format", "json")
    assert result.code == 0, result.err
    (read,) = json.loads(result.out)
    assert [t["trial_id"] for t in read["trials"]] == [
        "aaaaa_00001",  # best 7.0, though its last is 6.0
        "aaaaa_00000",
        "aaaaa_00002",
        "aaaaa_00003",  # 2.5 beats 0.5, but it failed: failed trials rank after the others
    ]
    by_id = {t["trial_id"]: t for t in read["trials"]}
    assert by_id["aaaaa_00001"]["status"] == "UNFINISHED"
    assert (by_id["aaaaa_00001"]["best"], by_id["aaaaa_00001"]["last"]) == (7.0, 6.0)
    assert by_id["aaaaa_00001"]["params"] == {"lr": 0.2, "model.layers": [16, 16]}
    assert by_id["aaaaa_00002"]["stopped_early"] and not by_id["aaaaa_00000"]["stopped_early"]
    assert by_id["aaaaa_00003"]["cause"] == "FloatingPointError"
    assert by_id["aaaaa_00003"]["error"] == "FloatingPointError: loss diverged"
    assert read["best"]["trial_id"] == "aaaaa_00001"
    assert read["failed"] == {"FloatingPointError": ["aaaaa_00003"]}
    assert read["counts"] == {"TERMINATED": 2, "UNFINISHED": 1, "ERROR": 1}
    assert not read["finished"]
    problems = " ".join(read["problems"])
    assert "results.jsonl: line 11 is not whole JSON" in problems
    assert "summary.json: unreadable" in problems


def test_table_top_and_csv(cli, tmp_path):
    _experiment(tmp_path, "one", torn=False)
    _experiment(tmp_path, "two", torn=False)
    table = cli("analyze", tmp_path, "--top", "2")
    assert table.code == 0
    assert table.out.count("(the best 2 of 4 trials)") == 2  # both experiments of the folder
    assert "best: aaaaa_00001 score = 7 lr=0.2" in table.out
    assert "failed, FloatingPointError (1): aaaaa_00003" in table.out
    assert "  aaaaa_00003: FloatingPointError: loss diverged at train.py:3; error: " in table.out
    assert "aaaaa_00002" not in table.out  # below the top 2

    rows = list(csv.DictReader(io.StringIO(cli("analyze", tmp_path, "--format", "csv").out)))
    assert len(rows) == 8 and {r["experiment"] for r in rows} == {"one", "two"}
    assert rows[0]["model.layers"] == "[16, 16]" and rows[0]["best"] == "7.0"
    assert rows[3]["cause"] == "FloatingPointError"  # failed: ranked after the others


def test_a_table_of_many_trials_shows_the_best_hundred_and_says_how_to_see_more(
    cli, tmp_path, monkeypatch
):
    """A terminal's table of 10,000 trials took 7 s to draw and scrolled the rest away: without
    --top a table stops at TABLE_ROWS (CSV and JSON keep every trial)."""
    from tune_app.readback import analyze

    monkeypatch.setattr(analyze, "TABLE_ROWS", 2)
    _experiment(tmp_path, "one", torn=False)
    table = cli("analyze", tmp_path)
    assert "(the best 2 of 4 trials; --top N shows more, --format csv every one)" in table.out
    assert "aaaaa_00002" not in table.out  # below the best 2
    assert "the best" not in cli("analyze", tmp_path, "--top", "4").out
    assert (
        len(list(csv.DictReader(io.StringIO(cli("analyze", tmp_path, "--format", "csv").out)))) == 4
    )


def test_bad_top(cli, tmp_path):
    _experiment(tmp_path)
    refused(cli("analyze", tmp_path, "--top", "0"), "--top must be at least 1")


@pytest.mark.parametrize("command, options", [("analyze", ["--format", "json"]), ("report", [])])
def test_analyze_and_report_never_import_ray(tmp_path, command, options):
    exp = _experiment(tmp_path)
    probe = (
        "import sys; from tune_app.cli import main;"
        f"code = main([{command!r}, {str(exp)!r}, *{options!r}]);"
        "print(code, 'ray' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stderr.split()[-2:] == ["0", "False"]
    assert (exp / "report.html").exists() == (command == "report")


@pytest.mark.parametrize(
    ("folder", "trial_id"),
    [
        ("train_abcde_00001_1_x=0.5_2026-01-01_00-00-00", "abcde_00001"),  # variant generator
        ("train_03428aeb_2_x=0.7020_2026-11-25_04-10-36", "03428aeb"),  # hyperopt, optuna
        ("PPO_CartPole-v1_1a2b3c4d_11_lr=0.0010_2026-11-25_04-10-36", "1a2b3c4d"),
        ("searcher-state-2026-11-25_04-10-36.pkl", None),
        ("experiment_state-2026-11-25_04-10-36.json", None),
    ],
)
def test_trial_folders_are_found_whatever_searcher_named_them(folder, trial_id):
    """Model-based searchers give trials eight hex digits; their folders were never matched, so
    a failed trial's error.txt went unread."""
    from tune_app.rundir.layout import trial_id_of

    assert trial_id_of(folder) == trial_id


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """`tune_app analyze DIR --format csv | head -1`: the pipe closes before the output is
    written; that ended in `error: BrokenPipeError`."""
    _experiment(tmp_path, torn=False)
    reader = subprocess.Popen(
        [sys.executable, "-m", "tune_app", "analyze", str(tmp_path), "--format", "csv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    reader.stdout.close()  # before the program has started: its first write fails
    _, err = reader.communicate(timeout=60)
    assert reader.returncode == 0 and err.decode().strip() == ""


def _deep(path):
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")


def _wrong_types(path):
    """The file's fields, of the wrong JSON types (a list for a score, an object for a name)."""
    if path.name == "run.json":
        bad = {key: {"<script>": 1} for key in ("experiment", "metric", "mode", "spec_file")}
        path.write_text(json.dumps({**bad, "searched": 7, "trials": "many"}))
    else:
        trial = {"trial_id": ["x"], "status": 3, "metric": [1], "iterations": "4", "config": []}
        trial |= {
            "values": None,
            "objectives": None,
            "broken": None,
        }  # items may be null, not these
        path.write_text(json.dumps({"experiment": "e", "metric": {}, "trials": [trial]}))


def _infinite(path):
    """Scores past what a float holds: the app writes null in their place, never Infinity."""
    if path.name == "summary.json":
        trials = [
            {"trial_id": f"aaaaa_0000{i}", "status": "TERMINATED", "metric": float("inf")}
            for i in range(3)
        ]
        path.write_text(json.dumps({"experiment": "e", "metric": "score", "trials": trials}))
    else:
        rows = [{"trial_id": f"aaaaa_0000{i}", "training_iteration": 1} for i in range(3)]
        path.write_text("".join(json.dumps(r)[:-1] + ', "score": 1e999}\n' for r in rows))


def _fifo(path):
    import os

    os.mkfifo(path)


def _to_dev_zero(path):
    path.symlink_to("/dev/zero")


def _to_elsewhere(path):
    """A link to a file outside the run folder, as `ln -s /etc/passwd error.txt`: read through,
    analyze printed the file and report embedded it."""
    elsewhere = path.parents[2] / "elsewhere.txt"
    elsewhere.write_text("ValueError: PRIVATE line of a file outside the run\n")
    path.symlink_to(elsewhere)


@pytest.mark.parametrize(
    ("file", "damage"),
    [
        pytest.param("results.jsonl", _deep, id="a-results-line-nested-deep"),
        pytest.param("run.json", _deep, id="run-json-nested-deep"),
        pytest.param("summary.json", _deep, id="summary-nested-deep"),
        pytest.param("summary.json", _fifo, id="summary-a-pipe"),
        pytest.param("summary.json", _wrong_types, id="summary-of-wrong-types"),
        pytest.param("run.json", _wrong_types, id="run-json-of-wrong-types"),
        pytest.param("results.jsonl", _fifo, id="results-a-pipe"),
        pytest.param("results.jsonl", _to_dev_zero, id="results-a-device"),
        pytest.param("experiment_state-2026-01-01_00-00-00.json", _fifo, id="tunes-state-a-pipe"),
        pytest.param("summary.json", _to_dev_zero, id="summary-a-device"),
        pytest.param("summary.json", _infinite, id="summary-of-infinite-scores"),
        pytest.param("results.jsonl", _infinite, id="results-of-infinite-scores"),
        pytest.param(f"{_FAILED}/error.txt", _to_elsewhere, id="error-a-link-out"),
    ],
)
def test_a_damaged_run_folder_is_read_as_far_as_it_goes(cli, tmp_path, file, damage):
    """A run folder received from someone: a file nested deeper than the parser goes crashed
    the readers with a bare RecursionError (exit 1), a field of the wrong type with a TypeError;
    a pipe or a device in a file's place hung them or filled the memory. Each is a file that
    cannot be read, said so, or a field read as missing; the rest is read."""
    exp = _experiment(tmp_path)
    path = exp / file
    path.unlink(missing_ok=True)
    damage(path)
    if file == "results.jsonl" and damage is _deep:  # one line nested deep amid whole ones
        path.unlink()
        _experiment(tmp_path / "whole")
        rows = (tmp_path / "whole" / "e" / "results.jsonl").read_text()
        path.write_text("[" * 100_000 + "]" * 100_000 + "\n" + rows)
    for command in ("analyze", "best", *(["report"] if damage is _infinite else [])):
        result = cli(command, exp)
        assert "Traceback" not in result.err and result.code in (0, 2), (command, result)
        if result.code == 2:  # what cannot be read, in one line
            assert len(result.err.strip().splitlines()) == 1, result.err
        assert not re.search(r"\binf\b", result.out), result.out  # no score
        assert "PRIVATE" not in result.out, result.out
    shown = cli("analyze", exp)
    assert shown.code == 0 or file == "run.json", shown


_CLONE = {"trial_id": "aaaaa_00000", "from_trial": "aaaaa_00001", "from_iteration": 1}
_SPEC = """
metric: score
mode: max
experiments:
  e:
    run: my_trainables:train
    stop: {training_iteration: 4}
    config:
      lr: {grid_search: [0.1, 0.2, 0.3, 0.4]}
      model: {layers: [16, 16]}
"""


@pytest.mark.parametrize(
    ("file", "change"),
    [
        pytest.param("clones.jsonl", {**_CLONE, "changed": [1, 2], "iteration": "x"}, id="clone-x"),
        pytest.param(
            "clones.jsonl", {**_CLONE, "changed": {"lr": 5}, "iteration": 1}, id="clone-5"
        ),
        pytest.param(
            "clones.jsonl",
            '{"trial_id": "aaaaa_00000", "from_trial": "aaaaa_00001", "iteration": 1e400}',
            id="clone-at-infinity",
        ),
        pytest.param(
            "finished.jsonl", {"trial_id": ["x"], "status": "ERROR"}, id="journal-list-id"
        ),
        pytest.param(
            "finished.jsonl", {"trial_id": "aaaaa_00001", "status": 5}, id="journal-status"
        ),
        pytest.param("run.json", {"warm_start": [{"run": "..", "trials": "x"}]}, id="warm-start-x"),
        pytest.param("run.json", {"searched": [1, None]}, id="searched-not-names"),
        pytest.param("run.json", {"experiment": "../../x"}, id="experiment-not-in-spec"),
        pytest.param("spec.yaml", _SPEC.replace("  e:", "  other:"), id="spec-of-another-run"),
        pytest.param("run.json", {"scope": "last-0-avg"}, id="scope-last-0"),
        pytest.param("run.json", {"scope": "last-99999999999999999999-avg"}, id="scope-huge"),
        pytest.param("run.json", {"aggregate": "bogus", "seeds": [0, 1]}, id="aggregate-bogus"),
        pytest.param("summary.json", {"early_stopping": [{"rung": 1, "trials": "x"}]}, id="rung"),
        pytest.param("summary.json", {"constraints": [{"name": "score", "min": "a"}]}, id="limit"),
        pytest.param(
            "results.jsonl",
            {"trial_id": "aaaaa_00000", "training_iteration": 5, "score": -1e308},
            id="results-near-float-limit",
        ),
    ],
)
def test_a_run_folder_of_malformed_records_is_read_by_every_reader(cli, tmp_path, file, change):
    """A record a reader takes a field of (a clone's iteration, a journal line's trial id,
    run.json's searched keys or scope) held another type or word: the readers ended in a
    ValueError or a TypeError (exit 1), and `best` in a KeyError where the spec as run lacked
    run.json's experiment. Each record is read once, typed (`records.record`): a field that
    does not fit reads as not recorded, a line of one is skipped with a note; a spec as run
    without the run's experiment is one line naming it. A score near a float's limit ended
    report in matplotlib's ValueError: that figure is left out."""
    user_module("my_trainables.py", tmp_path)
    exp = _experiment(tmp_path / "runs", torn=False)
    (exp / "spec.yaml").write_text(_SPEC)
    (exp / "summary.json").write_text(json.dumps({"experiment": "e", "metric": "score"}))
    path = exp / file
    if isinstance(change, str) and file == "spec.yaml":
        path.write_text(change)
    elif file.endswith(".jsonl"):  # the file's one line
        path.write_text((change if isinstance(change, str) else json.dumps(change)) + "\n")
    else:
        path.write_text(json.dumps(json.loads(path.read_text()) | change))
    warm = tmp_path / "warm.yaml"
    warm.write_text(
        _SPEC.replace("grid_search: [0.1, 0.2, 0.3, 0.4]", "uniform: [0, 1]")
        + f"    search: random\n    warm_start: [{str(exp)!r}]\n"
        + f"    storage_path: {tmp_path / 'o'}\n"
    )
    commands = [
        ("analyze", exp),
        ("report", exp, "--out", tmp_path / "r.html"),
        ("best", exp),
        (
            "compare",
            exp,
            _experiment(tmp_path / "whole", torn=False),
            "--html",
            tmp_path / "c.html",
        ),
        ("validate", warm),
    ]
    for command in commands:
        result = cli(*command)
        assert result.code in (0, 2) and "Traceback" not in result.err, (command, result)
        if result.code == 2 and command[0] != "validate":  # what cannot be read, in one line
            assert len(result.err.strip().splitlines()) == 1, result.err
            assert str(exp) in result.err, result.err
    if file in ("clones.jsonl", "finished.jsonl"):  # the line skipped, with a note
        read = json.loads(cli("analyze", exp, "--format", "json").out)[0]
        assert any(f"{file}: 1 line with a field" in p for p in read["problems"]), read
