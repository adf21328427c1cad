"""Progress: a compact live view on a terminal, one plain line per finished trial elsewhere,
Tune's tables only with -v, nothing but the summary with -q."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tune_app import progress
from tune_app.progress.view import View, describe

from .conftest import user_module


def _trial(status, config, trial_id="t", **result):
    return SimpleNamespace(status=status, config=config, last_result=result, trial_id=trial_id)


def test_a_snapshot_counts_trials_and_keeps_the_best_so_far():
    callback = progress.ProgressCallback("e", "loss", "min", ("lr", "model.width"), iterations=10)
    callback.setup(total_num_samples=6)
    trials = [
        _trial("TERMINATED", {"lr": 0.1, "model": {"width": 8}}, loss=0.5, training_iteration=10),
        _trial("ERROR", {"lr": 0.2, "model": {"width": 8}}, loss=0.1, training_iteration=3),
        _trial("RUNNING", {"lr": 0.3, "model": {"width": 16}}, loss=0.2, training_iteration=5),
        _trial("RUNNING", {"lr": 0.4, "model": {"width": 16}}, loss=float("nan")),
        _trial("PENDING", {"lr": 0.5, "model": {"width": 16}}),
    ]
    for i, trial in enumerate(trials):
        trial.trial_id = f"t{i}"
        callback.on_trial_result(0, trials, trial, trial.last_result)
    snap = callback.snapshot(trials)
    assert (snap.done, snap.running, snap.pending, snap.errored, snap.total) == (1, 2, 2, 1, 6)
    # the failed trial's 0.1 ranks after the others, as in the summary (records.ranked)
    assert snap.best == 0.2 and snap.best_params == "lr=0.3, model.width=16"
    # 2.5 of 6 trials' work done: the rest takes 3.5 / 2.5 of the time so far.
    assert snap.remaining_s == pytest.approx(snap.elapsed_s * 3.5 / 2.5)
    line = describe(snap)
    assert line.startswith("1/6 done, 2 running, 2 pending, 1 errored; best loss = 0.2")
    only_failed = callback.snapshot(trials[1:2])  # when nothing else scored, the failed one
    assert only_failed.best == 0.1


def test_the_live_view_redraws_one_line_per_experiment():
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with View(live=True, console=console) as view:
        # A trial's text is shown as written: `[/]` as rich's markup ended the run.
        view.snapshot(
            progress.Snapshot("a", done=1, total=4, metric="m", best=2.0, best_params="x=[/]a[b]")
        )
        view.snapshot(progress.Snapshot("b", running=2, total=2))
        view.line("[a] trial x done after 3 iterations")  # shown by the table instead
        view.line("[b] trial y failed, lr=0.1")
    text = out.getvalue()
    assert "\x1b[" in text  # a terminal: redrawn in place
    assert "1/4 done, 0 running" in text and "0/2 done, 2 running" in text
    assert "trial y failed" in text and "trial x done" not in text
    assert "best m = 2 (x=[/]a[b])" in text


@pytest.mark.slow  # the first tier checks the lines as the callback writes them
def test_run_prints_plain_lines_without_tune_tables_when_not_a_terminal(
    ray_session, cli, write_spec, tmp_path
):
    spec = write_spec(
        "e:\n  run: my_func\n  stop: {training_iteration: 2}\n"
        "  config: {alpha: {grid_search: [0.2, 0.4]}, beta: 1}\n"
    )
    normal = cli("run", spec, "--storage-path", tmp_path / "a")
    assert normal.code == 0
    lines = [ln for ln in normal.out.splitlines() if ln.startswith("[e] trial ")]
    assert len(lines) == 2 and all("done after 2 iterations" in ln for ln in lines)
    assert {"alpha=0.2" in ln for ln in lines} == {True, False}
    assert "\x1b[" not in normal.out + normal.err
    assert "Configuration for experiment" not in normal.out  # Tune's own tables stay off

    quiet = cli("run", spec, "--storage-path", tmp_path / "b", "-q")
    assert quiet.code == 0 and "[e] trial" not in quiet.out and "tune_app results" in quiet.out

    loud = cli("run", spec, "--storage-path", tmp_path / "c", "-v")
    assert loud.code == 0 and "Trial status" in loud.out and "[e] trial" not in loud.out


def test_the_best_so_far_follows_the_scope_and_a_nan_stopped_trial_is_errored():
    last = progress.ProgressCallback("e", "score", "max", (), scope="last")
    callback = progress.ProgressCallback("e", "score", "max", (), scope="all")
    a = _trial("RUNNING", {}, "a")
    b = _trial("RUNNING", {}, "b")
    for trial, value in [(a, 500.0), (b, 400.0), (a, 352.0)]:
        last.on_trial_result(0, [a, b], trial, {"score": value})
        callback.on_trial_result(0, [a, b], trial, {"score": value})
    assert last.snapshot([a, b]).best == 400.0  # a's last value is 352: b leads
    assert callback.snapshot([a, b]).best == 500.0
    c = _trial("TERMINATED", {}, "c", score=float("nan"))
    snap = callback.snapshot([a, b, c])
    assert (snap.done, snap.errored) == (0, 1)


@pytest.mark.e2e
def test_a_failing_trial_prints_one_line_and_no_traceback_when_piped(tmp_path):
    user_module("boom.py", tmp_path)
    (tmp_path / "s.yaml").write_text(
        "e:\n  run: boom:train\n  metric: score\n  mode: max\n"
        "  config: {x: {grid_search: [1, 2]}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tune_app", "run", "s.yaml", "--storage-path", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 1, text
    assert "Traceback" not in text and "\x1b[" not in text
    failed = [ln for ln in text.splitlines() if ln.startswith("[e] trial ") and "failed" in ln]
    assert len(failed) == 1, text
    assert "failed: ValueError: boom at x=2 at boom.py:9, x=2; error.txt, stdout in " in failed[0]
    import re

    files = re.search(r"; error\.txt, stdout in (\S+)$", failed[0])
    assert files is not None, failed[0]
    assert not files.group(1).startswith("/")  # under the working directory: named from there
    assert (tmp_path / files.group(1) / "error.txt").exists()
    assert (tmp_path / files.group(1) / "stdout").exists()  # kept by default


@pytest.mark.e2e
def test_run_says_it_started_before_ray_is_even_imported(tmp_path):
    """The start line comes first: nothing printed for the seconds Ray takes to import and start
    was the complaint."""
    from .conftest import SEARCH_SPACES

    grid = str(SEARCH_SPACES / "grid.yaml")
    command = ["run", grid, "--smoke", "--storage-path", str(tmp_path)]
    seen = _printed_until_imported(command, tmp_path, "ray")  # Ray's own package: enough
    start = [i for i, line in enumerate(seen) if line.startswith("tune_app: starting")]
    ray = [i for i, line in enumerate(seen) if _imports(line, "ray")]
    assert start and ray and start[0] < ray[0], seen[-5:]
    assert seen[start[0]] == (
        "tune_app: starting grid.yaml --smoke, 1 experiment: checking it (imports its "
        "trainables, reads the machine)"
    )


@pytest.mark.e2e
def test_the_start_line_comes_before_a_user_module_is_imported(tmp_path, write_spec):
    """A user's trainable module may import Ray itself (seconds): the line comes first."""
    user_module("report_steps.py", tmp_path)
    spec_file = write_spec("e: {run: report_steps:train, config: {steps: 1}}\n")
    command = ["run", str(spec_file), "--storage-path", str(tmp_path / "o")]
    seen = _printed_until_imported(command, tmp_path, "report_steps")
    start = [i for i, line in enumerate(seen) if line.startswith("tune_app: starting spec.yaml")]
    assert start and start[0] < len(seen) - 1, seen[-5:]  # before the module's own import line


def _printed_until_imported(command: list[str], cwd: Path, module: str) -> list[str]:
    """The lines `tune_app COMMAND` prints until it imports `module`: `-X importtime` logs each
    import as it happens, in the same stream."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-X", "importtime", "-m", "tune_app", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
    )
    seen = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line.rstrip("\n"))
            if _imports(line, module):
                break
    finally:
        proc.kill()
        proc.wait()
    return seen


def _imports(line: str, module: str) -> bool:
    """An `-X importtime` line for `module` itself (`import time: ... |   ray`)."""
    return line.startswith("import time:") and line.split("|")[-1].strip() == module


def test_a_log_that_is_no_terminal_gets_where_things_stand_at_least_every_30_s(capsys):
    now = [0.0]
    view = View(live=False, clock=lambda: now[0])
    snap = progress.Snapshot(
        "ppo", done=1, running=2, pending=3, total=6, metric="m", best=1.5, best_params="lr=0.1",
        elapsed_s=40.0, budget_s=600.0,
    )  # fmt: skip
    printed = []
    for t in [0.0, 0.5, 10.0, 25.0, 25.5, 49.0, 50.5, 80.0]:  # snapshots every 0.5 s or so
        now[0] = t
        view.snapshot(snap)
        if capsys.readouterr().out:
            printed.append(t)
    assert printed == [25.0, 50.5, 80.0]
    assert all(b - a <= 30 for a, b in zip([0.0, *printed], printed, strict=False))
    view.snapshot(snap)
    now[0] = 120.0
    view.snapshot(snap)
    line = capsys.readouterr().out.strip()
    assert line == (
        "[ppo] 1/6 done, 2 running, 3 pending, 0 errored; best m = 1.5 (lr=0.1); 40s elapsed; "
        "9m20s of the 10m00s budget left"
    )


def test_with_several_objectives_the_line_shows_the_front_as_the_summary_does():
    from tune_app.objectives import Limit, Objective
    from tune_app.readback import front
    from tune_app.rundir.records import RunSummary, TrialOutcome

    several = (Objective("acc", "max"), Objective("mem", "min"))
    limits = (Limit("mem", max=100.0),)
    callback = progress.ProgressCallback(
        "e", None, None, ("lr",), several=several, constraints=limits
    )
    values = {  # trial -> status, acc, mem
        "a": ("TERMINATED", 0.9, 80.0),  # on the front, best on acc
        "b": ("RUNNING", 0.7, 20.0),  # on the front
        "c": ("TERMINATED", 0.6, 50.0),  # dominated by b
        "d": ("TERMINATED", 0.99, 150.0),  # breaks mem <= 100: never on the front
        "e": ("ERROR", 0.95, 10.0),  # failed: never on the front
    }
    trials = []
    for i, (name, (status, acc, mem)) in enumerate(values.items()):
        trial = _trial(status, {"lr": i / 10}, name, acc=acc, mem=mem)
        trials.append(trial)
        callback.on_trial_result(0, trials, trial, trial.last_result)
    snap = callback.snapshot(trials)
    assert snap.front == 2 and snap.point == (("acc", 0.9), ("mem", 80.0))
    assert snap.best is None and snap.best_params == "lr=0"
    line = describe(snap)
    assert "front of 2, best on acc: acc = 0.9, mem = 80 (lr=0)" in line
    # The summary's front of the same trials: the same size, led by the same trial.
    summary = RunSummary(
        "e", None, None, 1.0, objectives=list(several), constraints=list(limits),
        trials=[
            TrialOutcome(
                name, "ERROR" if status == "ERROR" else "TERMINATED", {}, None, 1,
                objectives={"acc": acc, "mem": mem}, broken=["mem > max"] if mem > 100 else [],
            )
            for name, (status, acc, mem) in values.items()
        ],
    )  # fmt: skip
    assert len(summary.pareto()) == snap.front
    assert front.on_front(summary)[0].trial_id == "a"
    assert front.best_cell(summary) == f"front of {snap.front}"


def test_a_trial_that_breaks_a_constraint_is_never_the_best_so_far():
    from tune_app.objectives import Limit

    callback = progress.ProgressCallback(
        "e", "acc", "max", ("lr",), constraints=(Limit("mem", max=100.0),)
    )
    heavy = _trial("RUNNING", {"lr": 1}, "heavy", acc=0.99, mem=500.0)
    light = _trial("RUNNING", {"lr": 2}, "light", acc=0.5, mem=10.0)
    for trial in (heavy, light):
        callback.on_trial_result(0, [heavy, light], trial, trial.last_result)
    snap = callback.snapshot([heavy, light])
    assert (snap.best, snap.best_params, snap.front) == (0.5, "lr=2", None)


def test_a_finished_trial_line_names_each_objective():
    from tune_app.objectives import Objective

    lines = []
    progress.attach("e", SimpleNamespace(line=lines.append, snapshot=lambda snap: None))
    try:
        callback = progress.ProgressCallback(
            "e", None, None, (), several=(Objective("acc", "max"), Objective("mem", "min"))
        )
        trial = _trial("TERMINATED", {}, "t1", acc=0.5, mem=3.0, training_iteration=4)
        callback.on_trial_complete(0, [trial], trial)
    finally:
        progress.attach("e", None)
    assert lines == ["[e] trial t1 done after 4 iterations, acc = 0.5, mem = 3"]


@pytest.mark.parametrize(("iterations", "said"), [(1, "1 iteration,"), (2, "2 iterations,")])
def test_a_finished_trial_line_counts_its_iterations_in_words(iterations, said):
    lines = []
    progress.attach("e", SimpleNamespace(line=lines.append, snapshot=lambda snap: None))
    try:
        callback = progress.ProgressCallback("e", "acc", "max", ())
        trial = _trial("TERMINATED", {}, "t1", acc=0.5, training_iteration=iterations)
        callback.on_trial_complete(0, [trial], trial)
    finally:
        progress.attach("e", None)
    assert lines == [f"[e] trial t1 done after {said} acc = 0.5"]


def test_a_progress_callback_pickled_with_every_value_resumes_with_their_scores():
    """A run begun when the callback kept every metric value, resumed: each trial's score is
    rebuilt from them, and the best is the one they name."""
    import pickle

    old = progress.ProgressCallback("e", "loss", "min", (), scope="all")
    state = {k: v for k, v in old.__dict__.items() if k != "_scores"}
    state["_values"] = {"a": [3.0, 1.0, 2.0], "b": [1.5]}
    resumed = progress.ProgressCallback.__new__(progress.ProgressCallback)
    resumed.__setstate__(state)
    assert {k: s.value for k, s in resumed._scores.items()} == {"a": 1.0, "b": 1.5}
    again = pickle.loads(pickle.dumps(resumed))
    trial = SimpleNamespace(trial_id="a", status="TERMINATED", config={}, last_result={})
    other = SimpleNamespace(trial_id="b", status="TERMINATED", config={}, last_result={})
    assert again._best([trial, other]) == (1.0, trial)


def test_trials_ending_take_a_snapshot_at_most_every_period_and_each_reads_an_ended_trial_once(
    monkeypatch,
):
    """A search of thousands of short trials: a snapshot reads every trial, so trials ending
    do not each take one (quadratic in the trials), and an ended trial is read once; a trial
    that runs again (its status changed) is read anew."""
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    snaps = []
    progress.attach("e", SimpleNamespace(line=lambda text: None, snapshot=snaps.append))
    try:
        callback = progress.ProgressCallback("e", "acc", "max", ())
        trials = [_trial("RUNNING", {}, f"t{i}", acc=i, training_iteration=1) for i in range(50)]
        for trial in trials:
            callback.on_trial_result(0, trials, trial, trial.last_result)
        for trial in trials:
            trial.status = "TERMINATED"
            callback.on_trial_complete(0, trials, trial)
        assert len(snaps) == 1  # the first; the clock has not moved
        clock[0] += progress.SNAPSHOT_PERIOD_S
        callback.on_step_end(0, trials)
        assert len(snaps) == 2 and snaps[-1].done == 50 and snaps[-1].best == 49
        read = []  # the trials' results flattened (a config is flattened too, for its values)

        def flatten(d, *a):
            read.extend(["result"] if "training_iteration" in d else [])
            return dict(d)

        monkeypatch.setattr(progress, "flatten", flatten)
        assert callback.snapshot(trials).done == 50 and read == []
        trials[0].status, trials[0].last_result = "RUNNING", {"training_iteration": 2}
        again = callback.snapshot(trials)
        # Only the running one is read (for its count and its score's status), none ended.
        assert (again.done, again.running) == (49, 1) and 1 <= len(read) <= 2
    finally:
        progress.attach("e", None)


def test_what_is_printed_after_stdout_s_reader_has_gone_is_dropped(monkeypatch):
    """`run ... | head -1`: the reader went away mid-run, and the progress line's write raised
    BrokenPipeError inside Tune's loop, which failed the trial it reported."""
    from tune_app.cli.printing import stdout_while_read

    read, write = os.pipe()
    os.close(read)  # the reader is gone
    closed = io.TextIOWrapper(io.FileIO(write, "w"), write_through=False)
    monkeypatch.setattr(sys, "stdout", closed)
    view = View(live=False)
    with pytest.raises(BrokenPipeError):
        view.line("[e] trial a done")
    with stdout_while_read():
        for _ in range(3):
            view.line("[e] trial b done")  # dropped, not raised
        sys.stdout.flush()
    assert sys.stdout is closed


@pytest.mark.parametrize(
    ("beside", "holders"),
    [
        pytest.param((), "other work holds", id="alone"),
        # The spec's other experiments take what it takes: they were not named.
        pytest.param(("sb",), "this spec's other experiments (sb) or other work hold", id="beside"),
    ],
)
def test_trials_waiting_for_resources_the_plan_counted_on_are_said_once(
    monkeypatch, beside, holders
):
    """Trials held PENDING by other work on a cluster stayed so with no word on what they
    waited for: after WAITING_S with fewer running than the plan's at once, one line says it."""
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(progress.ray, "available_resources", lambda: {"CPU": 2.0, "GPU": 1.0})
    lines: list[str] = []
    progress.attach("e", SimpleNamespace(line=lines.append, snapshot=lambda snap: None))
    group = SimpleNamespace(required_resources={"CPU": 4.0, "GPU": 1.0})
    trials = [
        SimpleNamespace(
            trial_id=f"t{i}", status=s, config={}, last_result={}, placement_group_factory=group
        )
        for i, s in enumerate(["RUNNING", "PENDING", "PENDING"])
    ]
    callback = progress.ProgressCallback("e", None, None, (), at_once=3, beside=beside)
    try:
        for step in range(4):  # at 100 s, then 60 s, 120 s and 180 s on
            callback.on_step_end(step, trials)
            clock[0] += progress.WAITING_S
    finally:
        progress.attach("e", None)
    assert lines == [
        "[e] 2 trials waiting for {CPU: 4, GPU: 1} each, 1 of the 3 planned at once running: "
        f"Ray has {{CPU: 2, GPU: 1}} free ({holders} the rest)"
    ]
