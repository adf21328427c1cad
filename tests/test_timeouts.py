"""Time limits: `time_budget_s` (Tune's, for a whole search) and `result_timeout_s` (a running
trial silent that long fails with the cause "no result for N s", retried under max_failures):
the spec keys, the plan and its warning without Ray; a run checks that an endless search ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tune_app import spec
from tune_app.rundir.records import RunRecord

from .conftest import user_module

FILE = Path("spec.yaml")
BODY = "run: my_func\n    config: {alpha: 1, beta: 1}\n"


def test_both_keys_are_inherited_and_an_experiment_overrides_them():
    loaded = spec.loads(
        "time_budget_s: 3600\nresult_timeout_s: 60\nexperiments:\n"
        f"  a:\n    {BODY}"
        f"  b:\n    result_timeout_s: 2.5\n    time_budget_s: 10\n    {BODY}",
        FILE,
    )
    a, b = loaded.experiments
    assert (a.time_budget_s, a.result_timeout_s) == (3600, 60)
    assert (b.time_budget_s, b.result_timeout_s) == (10, 2.5)
    classic = spec.loads(f"e:\n    time_budget_s: 5\n    {BODY}", FILE).experiments[0]
    assert (classic.time_budget_s, classic.result_timeout_s) == (5, None)


@pytest.mark.parametrize(
    "text, path",
    [
        pytest.param("time_budget_s: 0\n", "time_budget_s", id="budget-zero"),
        pytest.param("time_budget_s: -5\n", "time_budget_s", id="budget-negative"),
        pytest.param("time_budget_s: .inf\n", "time_budget_s", id="budget-infinite"),
        pytest.param("result_timeout_s: true\n", "result_timeout_s", id="timeout-bool"),
        pytest.param("result_timeout_s: '60'\n", "result_timeout_s", id="timeout-text"),
        pytest.param("result_timeout_s: [60]\n", "result_timeout_s", id="timeout-list"),
        pytest.param(
            "experiments:\n  e:\n    result_timeout_s: .nan\n    run: my_func\n",
            "experiments.e.result_timeout_s",
            id="experiment-timeout-nan",
        ),
    ],
)
def test_a_time_limit_that_is_no_positive_number_is_one_clear_error(
    cli, write_spec, tmp_path, text, path
):
    if "experiments:" not in text:
        text += f"experiments:\n  e:\n    {BODY}"
    spec_file = write_spec(text)
    result = cli("run", spec_file, "--storage-path", tmp_path / "out")
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert line.startswith(f"error: {spec_file}: {path}: "), line
    key = path.rsplit(".", 1)[-1]
    for words in (f"{key} is a number of seconds above 0", "got ", "leave it out for no limit"):
        assert words in line
    assert not (tmp_path / "out").exists()


def test_validate_shows_the_limits_and_warns_of_time_total_s_without_a_result_timeout(
    cli, write_spec
):
    result = cli(
        "validate",
        write_spec(
            "time_budget_s: 600\nexperiments:\n"
            f"  silent:\n    stop: {{time_total_s: 30}}\n    {BODY}"
            f"  watched:\n    stop: {{time_total_s: 30}}\n    result_timeout_s: 45\n    {BODY}"
            f"  free:\n    time_budget_s: 5\n    {BODY}"
        ),
    )
    assert result.code == 0, result.err
    blocks = dict(b.split("\n", 1) for b in result.out.split("\n\n")[1:])
    assert "  stop       time_total_s >= 30 (checked when a result arrives)" in blocks["silent"]
    assert "  time       the search ends after 600 s (time_budget_s)\n" in blocks["silent"]
    assert (
        "  time       the search ends after 600 s (time_budget_s); a trial with no result for "
        "45 s fails (result_timeout_s)\n"
    ) in blocks["watched"]
    assert "  time       the search ends after 5 s (time_budget_s)\n" in blocks["free"]
    # One warning line, for the experiment whose time_total_s nothing backs.
    (warning,) = result.err.strip().splitlines()
    assert warning.startswith("warning: experiments.silent.stop.time_total_s: checked only when")
    assert "result_timeout_s" in warning
    plain = cli("validate", write_spec(f"e:\n    {BODY}"))
    assert "  time       no limit (time_budget_s, result_timeout_s)" in plain.out
    assert plain.err == ""


def test_run_json_records_the_limits_and_reads_them_back():
    record = RunRecord(experiment="e", time_budget_s=60.0, result_timeout_s=2.0)
    assert RunRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert RunRecord.from_json({"experiment": "old"}).result_timeout_s is None


def test_a_time_budget_ends_a_search_of_endless_trials(ray_session, cli, write_spec, tmp_path):
    user_module("hangs.py", tmp_path)
    spec_file = write_spec("""
metric: score
mode: max
time_budget_s: 4
experiments:
  endless:
    run: hangs:forever
    num_samples: 3
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "o" / "endless" / "summary.json").read_text())
    assert 4.0 <= summary["wall_time_s"] <= 4.0 + 10.0  # each trial would report for an hour
    assert summary["counts"] == {"TERMINATED": 3}
    # The first two (2 CPUs) ran until the budget ran out; the third, waiting for a CPU, never
    # started (nor did a second one, when starting a trial took the whole budget).
    ran = [t["iterations"] for t in summary["trials"]]
    never = ran.count(0)
    assert ran[0] >= 1 and ran[2] == 0, ran
    (note,) = summary["notes"]
    assert note.startswith("time_budget_s (4 s) ran out: the search was ended")
    assert note.endswith(f", {never} trial{'s' * (never > 1)} never started")
    assert note in result.out
