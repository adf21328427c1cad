"""Time limits: `time_budget_s` (Tune's, for a whole search) and `result_timeout_s` (a running
trial silent that long fails with the cause "no result for N s", retried under max_failures).
The spec keys, the plan and its warning, the failure record and the watch itself run without
Ray; two runs check that a hung trial and an endless search end."""

from __future__ import annotations

import json
import pickle
import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from tune_app import failures, spec
from tune_app.failures import NoResultError
from tune_app.rundir.records import RunRecord

from .conftest import refused, user_module

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
    key = path.rsplit(".", 1)[-1]
    words = f"{key} is a number of seconds above 0", "got ", "leave it out for no limit"
    refused(result, *words, file=spec_file, path=path)
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


TUNE_ERROR = (
    "Failure # 1 (occurred at 2026-11-25_10-31-59)\n"
    "\x1b[36mray::ImplicitFunc.train()\x1b[39m (pid=1, ip=192.0.2.2)\n"
    "ValueError: first attempt\n"
    "Failure # 2 (occurred at 2026-11-25_10-32-03)\n"
    "The actor died unexpectedly before finishing this task.\n"
    "The actor is dead because it was killed by `ray.kill`.\n"
)


def test_the_recorded_failure_replaces_only_the_last_one_in_tunes_files(tmp_path):
    text, pickled = tmp_path / "error.txt", tmp_path / "error.pkl"
    text.write_text(TUNE_ERROR)
    assert failures.from_text(TUNE_ERROR).cause == failures.KILLED  # what Tune alone says
    failures.record_failure(text, pickled, failures.no_result(2.5))
    kept, last = text.read_text().split("Failure # 2 (occurred at 2026-11-25_10-32-03)\n")
    assert kept == TUNE_ERROR.split("Failure # 2")[0]  # the first failure as Tune wrote it
    assert (
        last == "NoResultError: no result for 2.5 s (result_timeout_s), so its process was ended\n"
    )
    read = failures.from_text(text.read_text())
    error = pickle.loads(pickled.read_bytes())
    assert isinstance(error, NoResultError)
    assert read == failures.from_exception(error)
    assert read.cause == "no result for 2.5 s"


class FakeTrial(SimpleNamespace):
    """What the watch reads of a Tune Trial."""

    def __init__(self, trial_id: str, folder: Path, status: str = "RUNNING") -> None:
        super().__init__(trial_id=trial_id, status=status)
        self.error_file = str(folder / f"{trial_id}.txt")
        self.pickled_error_file = str(folder / f"{trial_id}.pkl")


@pytest.fixture
def watch():
    from tune_app.timeouts import ResultTimeout

    now = [0.0]
    killed: list[str] = []

    def kill(trial):
        killed.append(trial.trial_id)
        return True

    w = ResultTimeout(10.0, clock=lambda: now[0], kill=kill)
    w.now, w.killed = now, killed
    return w


def test_only_a_running_trial_silent_past_the_limit_is_killed_once(watch, tmp_path):
    trials = {s: FakeTrial(s.lower(), tmp_path, status=s) for s in ("RUNNING", "PAUSED")}
    pending = FakeTrial("pending", tmp_path, status="PENDING")  # never started: not watched
    for t in trials.values():
        watch.on_trial_start(0, [], t)
    watch.now[0] = 9.9
    watch.on_step_begin(0, [])
    assert watch.killed == []  # within the limit
    watch.now[0] = 10.0
    watch.on_step_begin(0, [*trials.values(), pending])
    watch.on_step_begin(0, [])  # Tune has not seen the failure yet: no second kill
    assert watch.killed == ["running"]  # a paused trial is not silent


def test_a_result_or_a_restart_restarts_the_clock(watch, tmp_path):
    trial = FakeTrial("t", tmp_path)
    watch.on_trial_start(0, [], trial)
    watch.now[0] = 8.0
    watch.on_trial_result(0, [], trial, {})
    watch.now[0] = 17.0
    watch.on_step_begin(0, [])
    assert watch.killed == []  # 9 s since its result
    trial.status = "PAUSED"  # a scheduler paused it; it resumes much later
    watch.now[0] = 100.0
    watch.on_step_begin(0, [])
    watch.on_trial_start(0, [], trial)
    trial.status = "RUNNING"
    watch.now[0] = 109.0
    watch.on_step_begin(0, [])
    assert watch.killed == []
    watch.now[0] = 110.0
    watch.on_step_begin(0, [])
    assert watch.killed == ["t"]


def test_a_trial_killed_for_silence_fails_with_that_cause_and_others_keep_theirs(watch, tmp_path):
    silent, raised = FakeTrial("silent", tmp_path), FakeTrial("raised", tmp_path)
    for t in (silent, raised):
        Path(t.error_file).write_text(TUNE_ERROR)
        watch.on_trial_start(0, [], t)
        watch.now[0] = 5.0  # the second starts later: within its limit at 11 s
    watch.now[0] = 11.0
    watch.on_step_begin(0, [silent, raised])
    assert watch.killed == ["silent"]
    watch.on_trial_recover(0, [], silent)  # Tune retries it: the failure is recorded
    watch.on_trial_recover(0, [], raised)  # a failure of its own: left as Tune wrote it
    assert failures.from_text(Path(silent.error_file).read_text()).cause == "no result for 10 s"
    assert Path(raised.error_file).read_text() == TUNE_ERROR
    # The retry is watched afresh: it fails again after another 10 s without a result.
    watch.on_trial_start(0, [], silent)
    watch.on_trial_complete(0, [], raised)
    watch.now[0] = 20.0
    watch.on_step_begin(0, [silent])
    assert watch.killed == ["silent"]
    watch.now[0] = 21.0
    watch.on_step_begin(0, [silent])
    assert watch.killed == ["silent", "silent"]


def test_the_watch_pickles_for_resume_without_its_trials(tmp_path):
    from tune_app.timeouts import ResultTimeout

    watch = ResultTimeout(10.0)
    trial = FakeTrial("t", tmp_path)
    trial.actor = lambda: None  # a live trial's actor cannot be pickled
    watch.on_trial_start(0, [], trial)
    assert pickle.loads(pickle.dumps(watch)).limit_s == 10.0  # Tune pickles its callbacks


def _failed_at(error_txt: str) -> list[float]:
    """When each failure in a trial's error.txt occurred, as Tune stamps them (local time)."""
    stamps = re.findall(r"^Failure # \d+ \(occurred at ([^)]*)\)", error_txt, flags=re.M)
    return [datetime.strptime(s, "%Y-%m-%d_%H-%M-%S").timestamp() for s in stamps]


@pytest.mark.slow  # an in-process run: the second tier
def test_a_trial_that_stops_reporting_fails_with_no_result_and_is_retried(
    ray_session, cli, write_spec, tmp_path
):
    user_module("hangs.py", tmp_path)
    log = tmp_path / "reports.txt"
    spec_file = write_spec(f"""
metric: score
mode: max
result_timeout_s: 2
experiments:
  function:
    run: hangs:train
    max_failures: 1
    config: {{log: {log}}}
  class:
    run: hangs:Hangs
    max_failures: 1
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 1, result.err  # the trials errored in the end
    for name in ("function", "class"):
        folder = tmp_path / "o" / name
        summary = json.loads((folder / "summary.json").read_text())
        (trial,) = summary["trials"]
        assert trial["status"] == "ERROR"
        assert trial["cause"] == "no result for 2 s"
        assert trial["failures"] == 2  # failed, retried once, failed again
        assert trial["error"].startswith("NoResultError: no result for 2 s (result_timeout_s)")
        assert summary["failed"] == {"no result for 2 s": [trial["trial_id"]]}
        (read,) = json.loads(cli("analyze", folder, "--format", "json").out)
        assert read["failed"] == summary["failed"]
        assert json.loads((folder / "run.json").read_text())["result_timeout_s"] == 2
    # Each attempt reported once, hung for 600 s, and failed soon after the limit (Tune stamps a
    # failure to the second).
    reported = [float(line) for line in log.read_text().split()]
    function = tmp_path / "o" / "function"
    (trial,) = json.loads((function / "summary.json").read_text())["trials"]
    failed = _failed_at((function / trial["path"] / "error.txt").read_text())
    assert len(reported) == len(failed) == 2
    for report, failure in zip(reported, failed, strict=True):
        assert 2.0 - 1.0 <= failure - report <= 2.0 + 4.0, (reported, failed)
    assert "failed, no result for 2 s (1)" in result.out


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
    # Each trial would report for an hour: the budget ended it, however busy the machine (a
    # bound of 10 s past the budget failed at a load of 6 on 2 cores).
    assert 4.0 <= summary["wall_time_s"] <= 4.0 + 120.0
    assert summary["counts"] == {"TERMINATED": 3}
    # At most two (2 CPUs) ran until the budget ran out; the third, waiting for a CPU, never
    # started (nor do the others when starting a trial takes the whole budget on a busy machine).
    ran = [t["iterations"] for t in summary["trials"]]
    never = ran.count(0)
    assert ran[2] == 0, ran
    (note,) = summary["notes"]
    assert note.startswith("time_budget_s (4 s) ran out: the search was ended")
    assert note.endswith(f", {never} trial{'s' * (never > 1)} never started")
    assert note in result.out
