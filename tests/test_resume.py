"""Interrupted searches: Ctrl-C exits 130 with state saved, a SIGKILLed driver's search resumes
without re-running finished trials, and results.jsonl stays whole and free of duplicates."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time
from collections import Counter, defaultdict

import pytest

from tune_app.rundir.layout import clone_key, decided_again

from .conftest import user_module
from .runs import grid_spec, started, wait_for


def _rows(path):
    text = path.read_text()
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _by_trial(rows):
    out = defaultdict(list)
    for row in rows:
        out[row["trial_id"]].append(row)
    return out


@pytest.fixture
def steps_spec(tmp_path):
    user_module("checkpointed_steps.py", tmp_path, "steps.py")

    def write(steps, sleep):
        path = tmp_path / "spec.yaml"
        path.write_text(grid_spec("steps:train", (1, 2), steps, sleep))
        return path

    return write


@pytest.mark.e2e
def test_sigkilled_driver_resumes_without_rerunning_finished_trials(steps_spec, tmp_path, cli):
    spec_file = steps_spec(steps="{grid_search: [3, 14]}", sleep=0.4)
    results = tmp_path / "out" / "e" / "results.jsonl"
    # Finished is what the journal says: a trial's last row comes a round trip before Tune
    # ends it, and a kill in between leaves it unfinished (resumed, not skipped).
    journal = tmp_path / "out" / "e" / "finished.jsonl"

    def ended():
        return {r["trial_id"] for r in _rows(journal)} if journal.exists() else set()

    def last_steps(trials):
        return {
            t: (rows[-1]["training_iteration"], rows[0]["config"]["steps"])
            for t, rows in trials.items()
        }

    def one_done_one_well_on():
        if not results.exists():
            return False
        steps = last_steps(_by_trial(_rows(results)))
        going = [t for t, (at, end) in steps.items() if 7 <= at < end]
        return bool(ended()) and bool(going)

    proc = started("run", spec_file, "--storage-path", tmp_path / "out", cwd=tmp_path)
    wait_for(one_done_one_well_on, proc)
    killed_at = time.time()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _by_trial(_rows(results))
    finished = {t: rows for t, rows in before.items() if t in ended()}
    assert all(r[-1]["training_iteration"] == r[0]["config"]["steps"] for r in finished.values())

    # Read back while interrupted, from the files alone: finished and unfinished trials. The
    # commands that read and check (no Ray, nothing run) in this process: only the run and its
    # resume are about a process of their own.
    analyzed = cli("analyze", tmp_path / "out", "--format", "json")
    assert analyzed.code == 0, analyzed.err
    (read,) = json.loads(analyzed.out)
    assert not read["finished"] and read["searched"] == ["x", "steps"]
    statuses = {t["trial_id"]: t["status"] for t in read["trials"]}
    assert {statuses[t] for t in finished} == {"TERMINATED"}
    assert "UNFINISHED" in statuses.values()
    for trial in read["trials"]:  # a trial still pending has no rows yet
        rows = before.get(trial["trial_id"])
        assert trial["iterations"] == (rows[-1]["training_iteration"] if rows else 0)
    # The HTML report says so, and lists the unfinished trials.
    page = tmp_path / "interrupted.html"
    reported = cli("report", tmp_path / "out", "--out", page)
    assert reported.code == 0, reported.err
    html = page.read_text()
    assert "This run did not finish" in html
    unfinished = [t["trial_id"] for t in read["trials"] if t["status"] == "UNFINISHED"]
    for trial_id in unfinished:
        assert re.search(f'data-trial="{trial_id}" class="[^"]*unfinished', html), trial_id
    # TensorBoard's HParams list the trials that started but never ended.
    from tensorboard.plugins.hparams import metadata

    from tests.test_tensorboard import _hparams

    # Events reach the disk within FLUSH_S; a trial started just before the kill may be lost.
    from tune_app.tensorboard.events import FLUSH_S

    running = [
        t
        for t in unfinished
        if before.get(t) and before[t][0]["logged_at"] < killed_at - FLUSH_S - 1
    ]
    assert running
    for trial_id in running:
        (folder,) = (tmp_path / "out" / "e").glob(f"*_{trial_id}_*")
        tags = _hparams(folder, metadata.SESSION_START_INFO_TAG)
        assert metadata.SESSION_START_INFO_TAG in tags
        assert metadata.SESSION_END_INFO_TAG not in tags

    # A new run would write beside it (test_reruns); validate says so, and how to continue it.
    again = cli("validate", spec_file, "--storage-path", tmp_path / "out")
    err = again.err
    assert again.code == 0 and f"`run` writes {tmp_path / 'out' / 'e_2'}" in err, err
    assert f"python -m tune_app resume {tmp_path / 'out' / 'e'}" in err

    original = spec_file.read_text()
    spec_file.write_text(original.replace("sleep: 0.4", "sleep: 0.5"))
    changed = cli("resume", tmp_path / "out" / "e", "-q")
    err = changed.err
    assert changed.code == 2 and "changed since the run" in err
    assert "-      sleep: 0.4\n+      sleep: 0.5" in err
    spec_file.write_text(original)

    resumed = started("resume", tmp_path / "out" / "e", cwd=tmp_path)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err

    after = _by_trial(_rows(results))
    assert len(after) == 4
    assert finished
    for trial_id, rows in finished.items():
        assert after[trial_id] == rows  # not run again: the very same lines
    restored = 0
    for rows in after.values():
        steps = [r["training_iteration"] for r in rows]
        assert steps == list(range(1, rows[0]["config"]["steps"] + 1))
        restored += sum(
            1 for r in rows if r["training_iteration"] > 1 == r["iterations_since_restore"]
        )
    assert restored >= 1  # an unfinished trial went on from its checkpoint
    counts = Counter((r["trial_id"], r["training_iteration"]) for r in _rows(results))
    assert max(counts.values()) == 1
    summary = json.loads((tmp_path / "out" / "e" / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 4} and not summary["interrupted"]


@pytest.mark.e2e
def test_ctrl_c_exits_130_with_a_resumable_state(steps_spec, tmp_path):
    spec_file = steps_spec(steps=30, sleep=0.2)
    results = tmp_path / "out" / "e" / "results.jsonl"
    proc = started("run", spec_file, "--storage-path", tmp_path / "out", cwd=tmp_path)
    wait_for(lambda: results.exists() and len(_rows(results)) >= 4, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"Continue with: python -m tune_app resume {tmp_path / 'out' / 'e'}" in err
    summary = json.loads((tmp_path / "out" / "e" / "summary.json").read_text())
    assert summary["interrupted"] and summary["counts"].get("UNFINISHED", 0) >= 2
    _rows(results)  # every line whole


def test_the_finished_journal_corrects_tune_stale_saved_statuses(tmp_path):
    """Tune never re-saves a paused trial that HyperBand stops without a live actor; the journal
    of ended trials decides its status after the run and before a resume."""
    from tune_app.rundir.layout import FINISHED_FILE, saved_trials
    from tune_app.rundir.write import mark_finished_trials

    def entry(trial_id: str, status: str) -> list[str]:
        return [json.dumps({"trial_id": trial_id, "status": status}), json.dumps({})]

    state = tmp_path / "experiment_state-2026-01-01_00-00-00.json"
    trials = [
        entry("a", "PAUSED"),
        entry("b", "PAUSED"),
        entry("c", "RUNNING"),
        entry("d", "TERMINATED"),
        entry("e", "RUNNING"),
    ]
    state.write_text(json.dumps({"trial_data": trials}))
    (tmp_path / FINISHED_FILE).write_text(
        json.dumps({"trial_id": "a", "status": "TERMINATED", "last_result": {"x": 1}})
        + "\n"
        + json.dumps({"trial_id": "b", "status": "ERROR", "last_result": {"x": 2}})
        + "\n"
        + json.dumps({"trial_id": "e", "last_result": {"x": 3}})  # the first journal's line
        + "\n"
    )
    assert sorted(mark_finished_trials(tmp_path)) == ["a", "b", "e"]
    assert {t: saved.status for t, saved in saved_trials(tmp_path).items()} == {
        "a": "TERMINATED",
        "b": "ERROR",
        "c": "RUNNING",  # not journaled: still unfinished, a resume runs it
        "d": "TERMINATED",
        "e": "TERMINATED",
    }
    metadata = json.loads(json.loads(state.read_text())["trial_data"][0][1])
    assert metadata["last_result"] == {"x": 1}


@pytest.mark.parametrize("torn", ["", '{"trial_data": [["{\\"trial_id'], ids=["empty", "torn"])
def test_a_torn_tune_state_file_is_left_alone_after_the_run(tmp_path, torn):
    """Tune writes its state file in place: a copy cut short left it empty, and marking the
    journal's trials in it raised after a whole run had finished."""
    from tune_app.rundir.layout import FINISHED_FILE, saved_trials
    from tune_app.rundir.write import mark_finished_trials

    state = tmp_path / "experiment_state-2026-01-01_00-00-00.json"
    state.write_text(torn)
    (tmp_path / FINISHED_FILE).write_text(json.dumps({"trial_id": "a", "status": "ERROR"}) + "\n")
    assert mark_finished_trials(tmp_path) == []
    assert saved_trials(tmp_path) == {}
    assert state.read_text() == torn  # not rewritten


@pytest.mark.parametrize("chunk", [1, 5, 1 << 18])
@pytest.mark.parametrize("indent", [None, 2])
def test_the_saved_trials_read_one_at_a_time_are_the_whole_parse_and_a_cut_file_raises(
    tmp_path, monkeypatch, indent, chunk
):
    """`newest_trial_entries` reads the state a chunk at a time rather than parsing it whole:
    its items are json.loads' "trial_data" whatever the keys around it and wherever a chunk
    ends (in a number too), and a file cut anywhere raises."""
    from tune_app.rundir import layout
    from tune_app.rundir.layout import newest_trial_entries

    monkeypatch.setattr(layout._JsonIn, "CHUNK", chunk)

    trials = [
        [json.dumps({"trial_id": t, "status": "PAUSED", "k": ["[", "]"]}), "{}"] for t in "ab"
    ]
    data = {
        "runner_data": {"trial_data": ["not these"], "n": [1, {"x": "}"}], "big": 123456789},
        "trial_data": trials,
        "stats": {"t": 1234.5678},
        "top": 1.25e300,  # a number of its own, which a chunk may end in: 1.|25e+300
    }
    text = json.dumps(data, indent=indent)
    state = tmp_path / "experiment_state-2026-01-01_00-00-00.json"
    state.write_text(text + "\n")
    assert list(newest_trial_entries(tmp_path)) == trials
    state.write_text(json.dumps({"stats": {}}))
    assert list(newest_trial_entries(tmp_path)) == []
    for cut in range(len(text)):
        state.write_text(text[:cut])
        with pytest.raises(ValueError):
            list(newest_trial_entries(tmp_path))
    state.write_text(text + " {}")
    with pytest.raises(ValueError):
        list(newest_trial_entries(tmp_path))


def test_a_trials_failures_are_what_tune_counted_when_the_journal_saw_it_end(tmp_path):
    """Failures come from Tune's saved state, or from the journal where it counted more (its
    count is taken when Tune reports the trial's end); a journal row of an older run, without a
    count, and a torn last line leave the saved count."""
    from tune_app.rundir.layout import FINISHED_FILE, saved_trials

    def entry(trial_id: str, failures: int) -> list[str]:
        return [
            json.dumps({"trial_id": trial_id, "status": "ERROR"}),
            json.dumps({"num_failures": failures}),
        ]

    state = tmp_path / "experiment_state-2026-01-01_00-00-00.json"
    state.write_text(json.dumps({"trial_data": [entry("a", 1), entry("b", 2), entry("c", 1)]}))
    (tmp_path / FINISHED_FILE).write_text(
        json.dumps({"trial_id": "a", "status": "ERROR", "failures": 2})
        + "\n"
        + json.dumps({"trial_id": "b", "status": "ERROR"})
        + "\n"
        + '{"trial_id": "c", "status": "ERROR", "fail'
    )
    assert {t: s.failures for t, s in saved_trials(tmp_path).items()} == {"a": 2, "b": 2, "c": 1}


SCHEDULED = """
metric: score
mode: max
scheduler: {scheduler}
experiments:
  e:
    run: steps:train
    num_samples: {samples}{seeds}
    stop: {{training_iteration: 9}}
    config:
      x: {{uniform: [0, 1]}}
      steps: 9
      sleep: 0.2
"""


@pytest.mark.e2e
@pytest.mark.parametrize(
    "scheduler",
    [
        "fifo",
        "{type: asha, max_t: 9, grace_period: 1, reduction_factor: 3}",
        "{type: median, time_attr: training_iteration, grace_period: 2, min_samples_required: 2}",
        "{type: hyperband, max_t: 9, reduction_factor: 3}",
        "{type: asha, max_t: 9, grace_period: 2, reduction_factor: 2} seeds",
        "{type: hyperband, max_t: 9, reduction_factor: 3} seeds",
    ],
    ids=["fifo", "asha", "median", "hyperband", "asha-seeds", "hyperband-seeds"],
)
def test_a_search_killed_mid_way_resumes_to_the_end_under_every_scheduler(tmp_path, scheduler):
    user_module("checkpointed_steps.py", tmp_path, "steps.py")
    spec_file = tmp_path / "spec.yaml"
    scheduler, seeds = scheduler.removesuffix(" seeds"), scheduler.endswith(" seeds")
    spec_file.write_text(  # with seeds: 4 configurations x 2 seeds (in turn), 8 trials
        SCHEDULED.format(
            scheduler=scheduler, samples=4 if seeds else 9, seeds="\n    seeds: 2" if seeds else ""
        )
    )
    trials = 9 - seeds  # 9, or 8
    folder = tmp_path / "out" / "e"
    journal = folder / "finished.jsonl"

    def some_ended_some_not():
        ended = len(_rows(journal)) if journal.exists() else 0
        return 2 <= ended < trials

    proc = started("run", spec_file, "--storage-path", tmp_path / "out", cwd=tmp_path)
    wait_for(some_ended_some_not, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _by_trial(_rows(folder / "results.jsonl"))
    ended = {row["trial_id"] for row in _rows(journal)}

    resumed = started("resume", folder, cwd=tmp_path)
    out, err = resumed.communicate(timeout=240)  # a hung resume fails here
    assert resumed.returncode == 0, err
    if "hyperband" in scheduler:
        assert "Tune does not save HyperBand's brackets" in err
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": trials} and not summary["interrupted"]
    after = _by_trial(_rows(folder / "results.jsonl"))
    assert len(after) == trials  # every trial accounted for
    for trial_id in ended:
        assert after[trial_id] == before[trial_id]  # finished trials were not run again
    for rows in after.values():  # no iteration twice, none skipped
        steps = [r["training_iteration"] for r in rows]
        assert steps == list(range(1, len(steps) + 1))
    if seeds:  # a configuration's seeds ended at one budget, before the kill and after it
        budgets = defaultdict(set)
        for rows in after.values():
            budgets[rows[0]["config"]["x"]].add(rows[-1]["training_iteration"])
        assert len(budgets) == 4 and all(len(b) == 1 for b in budgets.values()), budgets


TWO = """
metric: score
mode: max
experiments:
  a:
    run: steps:train
    config: {x: 1, steps: 40, sleep: 0.2}
  b:
    run: steps:train
    config: {x: 2, steps: 40, sleep: 0.2}
"""


@pytest.mark.e2e
def test_ctrl_c_with_two_experiments_prints_one_resume_command_for_both(tmp_path):
    user_module("checkpointed_steps.py", tmp_path, "steps.py")
    (tmp_path / "spec.yaml").write_text(TWO)
    out = tmp_path / "out"
    proc = started("run", "spec.yaml", "--storage-path", out, cwd=tmp_path)
    both = [out / name / "results.jsonl" for name in "ab"]
    wait_for(lambda: all(p.exists() and len(_rows(p)) >= 2 for p in both), proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    # one command: resume takes one folder, the storage folder holding both
    assert f"Continue with: python -m tune_app resume {out}\n" in err


def test_resuming_keeps_the_wall_time_of_a_finished_run_and_adds_to_an_interrupted_one(tmp_path):
    from types import SimpleNamespace

    from tune_app.rundir.location import RunLocation
    from tune_app.saved_state import earlier_wall_time

    ep = SimpleNamespace(folder=RunLocation(tmp_path))
    assert earlier_wall_time(ep) == (0.0, False)  # a killed run left no summary
    (tmp_path / "summary.json").write_text(json.dumps({"wall_time_s": 12.5, "interrupted": True}))
    assert earlier_wall_time(ep) == (12.5, False)
    (tmp_path / "summary.json").write_text(json.dumps({"wall_time_s": 30.0, "interrupted": False}))
    assert earlier_wall_time(ep) == (30.0, True)


PBT = """
metric: value
mode: max
seed: 3
search: random
scheduler:
  type: pbt
  perturbation_interval: 2
  quantile_fraction: 0.5
  resample_probability: 1.0
  hyperparam_mutations:
    lr: {uniform: [0.0, 1.0]}
experiments:
  climb:
    run: pbt_climb:train
    num_samples: 4
    stop: {training_iteration: 10}
    config:
      lr: {uniform: [0.0, 1.0]}
      sleep: 0.25
"""


@pytest.mark.e2e
def test_a_pbt_run_killed_twice_logs_each_iteration_and_clone_once(tmp_path):
    """Killed just after PBT logged an exploit, before Tune saved its state, a resumed run
    restores the trial as Tune saved it: it replays the iteration with its config from before
    the exploit (taken for an exploit, the replay was logged beside the row it repeats), and
    PBT may decide the exploit again (logged twice) or not (the record of an exploit the run
    no longer made stayed). Asynchronous PBT: Tune does not save the scheduler, and a resumed
    synchronous one waits forever once its trials are past the first perturbations."""
    from .test_population import after_clone

    user_module("pbt_climb.py", tmp_path)
    (tmp_path / "spec.yaml").write_text(PBT)
    folder = tmp_path / "out" / "climb"
    results, clones, journal = (
        folder / n for n in ("results.jsonl", "clones.jsonl", "finished.jsonl")
    )

    def count(path):
        return len(_rows(path)) if path.exists() else 0

    proc = started("run", "spec.yaml", "--storage-path", tmp_path / "out", cwd=tmp_path)
    # At once after the first exploit: Tune saves its state every second.
    wait_for(lambda: count(clones) >= 1, proc, every=0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    kills = [time.time()]
    proc.wait()
    assert count(journal) == 0

    proc = started("resume", folder, cwd=tmp_path)
    # Mid-iteration of the others, once a trial has ended (the four end within iterations of
    # one another: PBT takes turns with the two CPUs).
    wait_for(lambda: count(journal) >= 1, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    kills.append(time.time())
    proc.wait()
    last_kill = kills[-1]
    ended = {row["trial_id"] for row in _rows(journal)}
    before = _by_trial(_rows(results))

    proc = started("resume", folder, cwd=tmp_path)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 4}

    rows = _rows(results)
    events = _rows(clones)
    assert max(Counter((r["trial_id"], r["training_iteration"]) for r in rows).values()) == 1
    # Each exploit once: two at one (trial, iteration) are one after the other, never one
    # decided again from where the other started.
    for i, later in enumerate(events):
        for earlier in events[:i]:
            if clone_key(earlier) == clone_key(later):
                assert not decided_again(later, earlier), (earlier, later)
    after = _by_trial(rows)
    assert ended and len(after) == 4
    for trial_id in ended:
        assert after[trial_id] == before[trial_id]  # not run again, not rewritten
    # No gap: each step is the one after, or where an exploit moved the trial onto a checkpoint
    # further on (the rows in between are the other trial's).
    moved = {(c["trial_id"], c["iteration"]): c["from_iteration"] for c in events}
    for trial_id, trial_rows in after.items():
        steps = [r["training_iteration"] for r in trial_rows]
        assert steps[0] == 1 and steps[-1] == 10, steps
        for step, following in zip(steps, steps[1:], strict=False):
            assert following == step + 1 or moved.get((trial_id, step)) == following - 1, steps
    # Each clone is one the run made: the trial's rows logged after it, up to its next clone,
    # read the lr it set. A record of an exploit logged before a kill may be one the resumed
    # run did not make again: then every such row reads the lr from before it.
    for trial_id, trial_rows in after.items():
        by_step = {r["training_iteration"]: r for r in trial_rows}
        own = [c for c in events if c["trial_id"] == trial_id]
        for n, clone in enumerate(own):
            until = own[n + 1]["logged_at"] if n + 1 < len(own) else math.inf
            later = [r for r in after_clone(by_step, clone) if r["logged_at"] < until]
            lr_before, lr = clone["changed"]["lr"]
            made = all(r["lr_seen"] == pytest.approx(lr) for r in later)
            not_made_again = clone["logged_at"] < last_kill and all(
                r["lr_seen"] == pytest.approx(lr_before) for r in later
            )
            # On failure, the whole story of the trial: its clones, its rows and the kills.
            assert made or not_made_again, _story(own, trial_rows, kills, n)


def _story(clones: list[dict], rows: list[dict], kills: list[float], n: int) -> str:
    """A trial's clones (the n-th marked), rows and the kills, in order of time, one per line."""
    lines = [(k, f"kill {k:.2f}") for k in kills]
    for i, c in enumerate(clones):
        mark = " <- this one" if i == n else ""
        lines.append((c["logged_at"], f"clone at {c['iteration']} lr {c['changed']['lr']}{mark}"))
    for r in rows:
        lines.append((r["logged_at"], f"row {r['training_iteration']} lr_seen {r['lr_seen']}"))
    return "\n" + "\n".join(f"{t:.2f} {text}" for t, text in sorted(lines))


def test_tune_is_given_an_absolute_folder_to_restore_from(tmp_path, monkeypatch):
    # `resume out/e` failed with pyarrow's "URI has empty scheme: 'out/e'" (exit 1).
    from pathlib import Path

    from tune_app.rundir.location import RunLocation

    monkeypatch.chdir(tmp_path)
    assert RunLocation(Path("out/e")).tune_where == str(tmp_path / "out" / "e")
    assert RunLocation(Path("x"), "s3://bucket/runs/e").tune_where == "s3://bucket/runs/e"


def test_a_resumed_optuna_search_loads_its_study_without_optuna_s_info_line(tmp_path):
    """Tune sets a searcher restored from its saved state up again, and Optuna's
    `[I ...] Using an existing study` came out on every resume: the table's `on_restore`,
    called before that, silences it (the control, without it, shows the line)."""
    import logging
    import pickle

    import optuna
    from ray import tune

    from tune_app.methods import SEARCHERS, Context
    from tune_app.methods.searchers import OptunaOptions
    from tune_app.rundir.location import RunLocation

    entry = SEARCHERS["optuna"]
    ctx = Context(seed=0, folder=RunLocation(tmp_path / "e"))
    (tmp_path / "e").mkdir()
    saved = pickle.dumps(entry.build(OptunaOptions(), ctx))  # as Tune's tuner.pkl holds it
    space = {"x": tune.uniform(0.0, 1.0)}
    pickle.loads(saved).set_search_properties("score", "max", space)  # the first run's study

    class Recorded(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    def resumed(prepare: bool) -> list[str]:
        optuna.logging.set_verbosity(optuna.logging.INFO)  # a fresh process: Optuna's default
        handler = Recorded()
        logging.getLogger("optuna").addHandler(handler)
        try:
            if prepare:
                assert entry.on_restore is not None
                entry.on_restore()
            pickle.loads(saved).set_search_properties("score", "max", space)
        finally:
            logging.getLogger("optuna").removeHandler(handler)
        return handler.lines

    try:
        assert any("Using an existing study" in line for line in resumed(prepare=False))
        assert resumed(prepare=True) == []
        assert optuna.logging.get_verbosity() == optuna.logging.WARNING
    finally:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
