"""Trial failures: retried from the last checkpoint up to max_failures (an exception or a killed
worker), the rest of the search goes on, and failed trials are grouped by cause."""

from __future__ import annotations

import json
import pickle
from collections import defaultdict
from types import SimpleNamespace

import pytest

from tune_app import failures

from .conftest import results_of, user_module


@pytest.mark.slow  # an in-process run: the second tier
def test_failed_trials_are_retried_from_checkpoints_and_grouped_by_cause(
    ray_session, cli, write_spec, tmp_path
):
    user_module("flaky.py", tmp_path, "flaky.py")
    markers = tmp_path / "markers"
    markers.mkdir()
    spec_file = write_spec(f"""
metric: score
mode: max
experiments:
  flaky:
    run: flaky:train
    max_failures: 1
    config:
      markers: {markers}
      mode: {{grid_search: [raise_once, kill_once, raise_always, kill_always, nan]}}
""")
    junit = tmp_path / "junit.xml"
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q", "--junit", junit)
    assert result.code == 1, result.err

    folder = tmp_path / "o" / "flaky"
    summary = json.loads((folder / "summary.json").read_text())
    by_mode = {t["config"]["mode"]: t for t in summary["trials"]}
    # Failed once, then resumed from the step-1 checkpoint and finished.
    for mode in ("raise_once", "kill_once"):
        assert by_mode[mode]["status"] == "TERMINATED"
        assert by_mode[mode]["failures"] == 1
        assert by_mode[mode]["metric"] == 3.0
    # Failed again on the retry: the last failure decides the cause.
    assert by_mode["raise_always"]["failures"] == 2
    assert by_mode["kill_always"]["failures"] == 2
    assert summary["failed"] == {
        "ValueError": [by_mode["raise_always"]["trial_id"]],
        "killed": [by_mode["kill_always"]["trial_id"]],
        "non-finite metric": [by_mode["nan"]["trial_id"]],
    }
    assert by_mode["raise_always"]["error"] == "ValueError: raise_always at step 2"
    assert by_mode["nan"]["error"] == "score = nan at iteration 2"
    assert by_mode["nan"]["iterations"] == 2  # stopped at the NaN, not run to the end
    assert summary["counts"] == {"TERMINATED": 2, "ERROR": 3}

    # Each recovered trial logged steps 1, 2, 3 once: nothing lost or repeated by the retry.
    steps = defaultdict(list)
    for row in results_of(folder):
        steps[row["trial_id"]].append(row["training_iteration"])
    for mode in ("raise_once", "kill_once"):
        assert steps[by_mode[mode]["trial_id"]] == [1, 2, 3]

    # analyze reads the same groups back from the files.
    assert cli("analyze", folder, "--format", "json").code == 0
    (read,) = json.loads(cli("analyze", folder, "--format", "json").out)
    assert read["failed"] == summary["failed"]
    shown = cli("analyze", folder).out
    assert "failed, killed (1)" in shown and "ValueError: raise_always at step 2" in shown

    assert "failed, ValueError (1)" in result.out
    assert "3 of 5 trials errored" in result.out + result.err
    assert 'type="killed"' in junit.read_text()


RAY_TASK_ERROR_TXT = """Failure # 1 (occurred at 2026-11-21_15-14-32)
\x1b[36mray::ImplicitFunc.train()\x1b[39m (pid=32168, ip=192.0.2.2, repr=train)
  File "/venv/ray/tune/trainable/function_trainable.py", line 249, in _trainable_func
    output = fn()
             ^^^^
  File "/tmp/fx/fx.py", line 16, in train
    raise ValueError("boom at step 2\\nsecond line")
ValueError: boom at step 2
second line
"""

ACTOR_DIED_TXT = """Failure # 1 (occurred at 2026-11-21_15-14-31)
Traceback (most recent call last):
  File "/venv/ray/tune/execution/tune_controller.py", line 1, in _on_result
    raise x
KeyError: 'not this one'
Failure # 2 (occurred at 2026-11-21_15-14-40)
The actor died unexpectedly before finishing this task.
\tclass_name: ImplicitFunc
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker \
exit detail: Worker unexpectedly exits with a connection error code 2. Some common causes \
include: (1) the process was killed by the OOM killer due to high memory usage
"""


def test_fail_fast_ends_the_run_at_the_first_failure_and_trials_log_to_their_folders(
    ray_session, cli, write_spec, tmp_path
):
    user_module("chatty.py", tmp_path, "chatty.py")
    spec_file = write_spec("""
chatty:
  run: chatty:train
  fail_fast: true
  log_to_file: true
  config: {x: {grid_search: [1, 2, 3, 4]}}
""")
    result = cli("run", spec_file, "-q", "--storage-path", tmp_path / "out")
    assert result.code == 1, result.err[-2000:]
    folder = tmp_path / "out" / "chatty"
    trials = json.loads((folder / "summary.json").read_text())["trials"]
    ran = [t for t in trials if t["iterations"]]
    # Two trials at a time: x = 1 and x = 2 ran; x = 2 failed; x = 3 and 4 never started.
    assert sorted(t["config"]["x"] for t in ran) == [1, 2]
    assert [t["status"] for t in ran if t["config"]["x"] == 2] == ["ERROR"]
    for trial in ran:
        stdout = (folder / trial["path"] / "stdout").read_text()
        assert f"chatty x={trial['config']['x']}" in stdout


def test_error_files_give_the_last_failure_and_its_cause():
    found = failures.from_text(RAY_TASK_ERROR_TXT)
    assert found == failures.Failure(
        "ValueError", "ValueError: boom at step 2\nsecond line", frame="fx.py:16"
    )
    died = failures.from_text(ACTOR_DIED_TXT)
    assert died.cause == "killed"
    assert died.message.startswith("The actor died unexpectedly")


def test_causes_of_common_errors():
    assert failures.classify("MemoryError: no memory").cause == "out of memory"
    assert failures.classify("torch.OutOfMemoryError: CUDA out of memory.").cause == (
        "out of memory"
    )
    oom = "Task was killed due to the node running low on memory.\nMemory on the node was 23GB"
    assert failures.classify(oom).cause == "out of memory"
    assert failures.classify("ray.exceptions.WorkerCrashedError: gone").cause == "killed"
    assert failures.classify("json.decoder.JSONDecodeError: bad").cause == "JSONDecodeError"
    assert failures.classify("something odd happened").cause == "unknown error"
    four = failures.classify("RuntimeError: a\nb\nc\nd")
    assert four.message == "RuntimeError: a\nb\nc"  # the first lines only


def test_exceptions_from_ray_are_unwrapped_to_the_trial_own_error():
    from ray.exceptions import RayTaskError

    try:
        raise KeyError("lr")
    except KeyError as err:
        wrapped = RayTaskError("train", "traceback text", err).as_instanceof_cause()
    found = failures.from_exception(wrapped)
    assert (found.cause, found.message) == ("KeyError", "KeyError: 'lr'")
    assert found.frame is not None and found.frame.startswith("test_failures.py:")  # raised here


OOM_KILL_TXT = """Failure # 1 (occurred at 2026-11-25_10-50-02)
1 worker(s) were killed due to the node running low on memory. Memory on the node (IP: \
127.0.0.1, ID: 382c) was 3.43GB used / 23.54GB limit (0.145916)
OOM kill reason: Memory usage 3667054592B exceeded threshold of 3665092608B
"""


def test_a_worker_killed_for_memory_is_out_of_memory_whichever_way_tune_gives_it():
    """Tune pickles only Ray's task and actor errors; a trial whose process the memory monitor
    killed in its set-up comes back as the text of its error.txt (it read `str: Failure # 1`),
    one killed while it ran, as ActorOutOfMemoryError (`ray_internals.memory`)."""
    from tune_app.ray_internals.memory import ActorOutOfMemoryError

    text = failures.from_exception(OOM_KILL_TXT)
    assert text.cause == "out of memory"
    assert text.message.startswith("1 worker(s) were killed due to the node running low")
    error = ActorOutOfMemoryError(OOM_KILL_TXT.split("\n", 1)[1])
    raised = failures.from_exception(error)
    assert raised.cause == "out of memory"
    assert raised.message.startswith("ActorOutOfMemoryError: 1 worker(s) were killed")


def test_tune_takes_a_trial_killed_for_memory_as_a_dead_actor_not_its_own_crash():
    """Ray 2.60 gives OutOfMemoryError for a call to an actor its memory monitor killed; Tune's
    actor manager raised RuntimeError for it, ending the whole search."""
    from ray.air.execution._internal.actor_manager import RayActorManager
    from ray.exceptions import OutOfMemoryError, RayActorError

    from tune_app.ray_internals.memory import trial_oom_is_actor_death

    seen: list[Exception] = []
    actor = SimpleNamespace(actor_id="a1", _on_error=lambda actor, exc: seen.append(exc))
    task = SimpleNamespace(_tracked_actor=actor, _on_error=lambda actor, exc: seen.append(exc))
    manager = SimpleNamespace(_failed_actor_ids=set(), _cleanup_actor=lambda tracked_actor: None)
    killed = OutOfMemoryError("1 worker(s) were killed due to the node running low on memory.")
    with pytest.raises(RuntimeError, match="Caught unexpected exception"):
        RayActorManager._actor_task_failed(manager, task, killed)  # Ray as it is
    with trial_oom_is_actor_death():
        RayActorManager._actor_task_failed(manager, task, killed)
    assert manager._failed_actor_ids == {"a1"} and len(seen) == 2  # the actor's, the call's
    assert all(isinstance(e, RayActorError) for e in seen)
    back = pickle.loads(pickle.dumps(seen[0]))  # Tune keeps a trial's error as a pickle
    assert failures.from_exception(back).cause == "out of memory"
    assert str(back) == str(killed)
    with pytest.raises(RuntimeError):  # put back as it was
        RayActorManager._actor_task_failed(manager, task, killed)


def _failed_trial(tmp_path, trial_id, error):
    path = tmp_path / f"{trial_id}.txt"
    path.write_text(f"Failure # 1 (occurred at 2026-11-21_15-14-32)\n{error}\n")
    return SimpleNamespace(trial_id=trial_id, error_file=str(path))


@pytest.mark.parametrize(
    ("errors", "limit", "ended"),
    [
        pytest.param(["KeyError: 'hidden'"] * 3, 3, True, id="three-alike"),
        pytest.param(["KeyError: 'hidden'"] * 2, 3, False, id="two-of-three"),
        pytest.param(["KeyError: 'hidden'"] * 3, 4, False, id="expect-allows-more"),
        pytest.param(
            (["ValueError: seed 1 in /a/1.npy", "ValueError: seed 22 in /b/c/22.npy"] * 2)[:3],
            3,
            True,
            id="trial-specific-numbers-and-paths",
        ),
        pytest.param(
            ["KeyError: 'hidden'", "KeyError: 'depth'", "KeyError: 'hidden'"], 3, False, id="unlike"
        ),
    ],
)
def test_trials_failing_alike_before_any_result_end_the_search(tmp_path, errors, limit, ended):
    from tune_app.callbacks import SameFailures

    guard = SameFailures(limit)
    guard.setup(total_num_samples=6)
    trials = [_failed_trial(tmp_path, f"t{i}", e) for i, e in enumerate(errors)]
    for trial in trials:
        assert not guard.stop_all()
        guard.on_trial_error(0, trials, trial)
    assert guard.stop_all() is ended
    assert not guard(trials[0].trial_id, {"score": 1})  # ends no trial on its own


def test_a_result_first_leaves_the_search_alone_and_a_resumed_guard_watches_anew(tmp_path):
    from tune_app.callbacks import SameFailures

    guard = SameFailures(2)
    first, second = (_failed_trial(tmp_path, f"t{i}", "KeyError: 'x'") for i in range(2))
    guard.on_trial_result(0, [], first, {"score": 1.0})
    guard.on_trial_error(0, [], first)
    guard.on_trial_error(0, [], second)
    assert not guard.stop_all()
    fresh = SameFailures(2)
    fresh.on_trial_error(0, [], first)
    fresh.on_trial_error(0, [], second)
    assert fresh.stop_all()
    resumed = pickle.loads(pickle.dumps(fresh))
    assert (resumed.limit, resumed.ended, resumed.failed) == (2, False, 0)
    # Fewer trials than the limit: all of them.
    few = SameFailures(3)
    few.setup(total_num_samples=1)
    few.on_trial_error(0, [first], first)
    assert few.stop_all()


def test_a_class_whose_setup_raised_is_named_not_tunes_wrapper():
    text = (
        "The actor died because of an error raised in its creation task, "
        "ray::ResourceTrainable.__init__() (pid=1, ip=127.0.0.1, "
        "repr=<ray.tune.trainable.util.Missing_5944ae object at 0x7f535a6f2310>)\n"
        '  File "/home/me/keyfail.py", line 8, in setup\n'
        "KeyError: 'hidden'"
    )
    assert failures.classify(text).message == "KeyError: 'hidden' (in Missing set-up)"
    found = failures.from_text(f"Failure # 1 (occurred at 2026-11-21_15-14-32)\n{text}\n")
    assert (found.cause, found.frame) == ("KeyError", "keyfail.py:8")
    assert found.message == "KeyError: 'hidden' (in Missing set-up)"
    unnamed = text.replace("repr=<ray.tune.trainable.util.Missing_5944ae object at ", "at <")
    assert failures.classify(unnamed).message == "KeyError: 'hidden' (in its set-up)"


SETUP_KEYERROR = '''"""A class trainable whose set-up reads a config key the spec does not give."""

from ray import tune


class Missing(tune.Trainable):
    def setup(self, config):
        self.width = config["hidden"]

    def step(self):
        return {"score": 1.0}
'''


@pytest.mark.parametrize(
    ("expect", "ran"),
    [
        pytest.param("", 3, id="ended-after-three"),
        pytest.param(
            "    expect: {max_errored_trials: 6}\n",
            6,
            id="expect-allows-all",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_search_whose_trials_all_fail_alike_in_set_up_ends_early_with_one_line(
    ray_session, cli, write_spec, tmp_path, expect, ran
):
    (tmp_path / "keyfail.py").write_text(SETUP_KEYERROR)
    spec_file = write_spec(
        "metric: score\nmode: max\nexperiments:\n  keys:\n    run: keyfail:Missing\n"
        f"{expect}    config:\n      lr: {{grid_search: [1, 2, 3, 4, 5, 6]}}\n"
    )
    result = cli("run", spec_file, "--storage-path", tmp_path / "o")
    summary = json.loads((tmp_path / "o" / "keys" / "summary.json").read_text())
    failed = [t for t in summary["trials"] if t["status"] == "ERROR"]
    assert len(failed) == ran, result.out
    assert summary["failed"] == {"KeyError": [t["trial_id"] for t in failed]}
    assert {t["error"] for t in failed} == {"KeyError: 'hidden' (in Missing set-up)"}
    trial_lines = [ln for ln in result.out.splitlines() if ln.startswith("[keys] trial ")]
    assert len(trial_lines) == ran and all(len(ln) <= 200 for ln in trial_lines)
    assert all("ResourceTrainable" not in ln for ln in trial_lines)
    ended = [ln for ln in result.err.splitlines() if "failed alike" in ln]
    if ran == 6:  # allowed: the run passes its expectations, and says nothing more
        assert (result.code, ended) == (0, []), result.err
        return
    assert result.code == 1, result.err
    (line,) = ended
    assert line.startswith("error: [keys] 3 trials failed alike before any trial reported")
    assert "search ended (3 never ran)" in line
    assert "KeyError: 'hidden' (in Missing set-up) at keyfail.py:8; fix that" in line
    assert "expect.max_errored_trials" in line and "Traceback" not in result.err
