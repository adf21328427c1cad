"""Unit tests of the pieces the end-to-end runs rely on: JsonlResults (torn lines, replays,
NaN), read_experiment (statuses, scores, NaN runs), summarize (best under the scope, failures,
RLlib's missing keys) and the stopper (thresholds, missing keys, divergence). No Ray instance."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from ray.tune.experiment import Trial

from tune_app import spec
from tune_app.callbacks import JsonlResults, PlainNumbers
from tune_app.plan.make import make_plan
from tune_app.rundir.location import RunLocation
from tune_app.rundir.outcome import summarize
from tune_app.rundir.read import read_experiment
from tune_app.tuner import SpecStopper

from .conftest import results_of, user_module
from .test_scoring import SPEC


def trial(trial_id, **config):
    return SimpleNamespace(trial_id=trial_id, config=config)


# ---- JsonlResults -------------------------------------------------------------------------------


def test_results_log_cuts_a_torn_line_and_replaces_replayed_iterations(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(
        json.dumps({"trial_id": "a", "training_iteration": 1, "config": {"x": 1}}) + "\n"
        + json.dumps({"trial_id": "a", "training_iteration": 2}) + "\n"
        + '{"trial_id": "a", "training_iter'  # a killed run's last, torn line
    )  # fmt: skip
    log = JsonlResults(RunLocation(path.parent), "e")
    a = trial("a", x=1)
    log.on_trial_result(0, [a], a, {"training_iteration": 2, "score": 5.0})  # restored at 2
    log.on_trial_result(0, [a], a, {"training_iteration": 3, "score": 6.0, "done": False})
    rows = results_of(tmp_path)
    assert [r["training_iteration"] for r in rows] == [1, 2, 3]
    assert rows[1]["score"] == 5.0 and "done" not in rows[2]
    assert "config" in rows[0] and all("config" not in r for r in rows[1:])


def test_a_results_log_unpickled_while_restoring_writes_where_the_folder_is_now(tmp_path):
    """Only while `restoring` holds (Tune's restore of a run): a callback unpickled later, as
    for the next run in the process of an experiment of the same name, keeps its own folder."""
    import pickle

    from tune_app.callbacks import restoring

    pickled = pickle.dumps(JsonlResults(RunLocation(tmp_path / "then" / "e"), "e"))
    with restoring("e", RunLocation(tmp_path / "now" / "e")):
        assert pickle.loads(pickled).path == tmp_path / "now" / "e" / "results.jsonl"
    with restoring("other", RunLocation(tmp_path / "now" / "other")):
        assert pickle.loads(pickled).path == tmp_path / "then" / "e" / "results.jsonl"
    later = pickle.loads(pickled)
    assert later.path == tmp_path / "then" / "e" / "results.jsonl"


def test_results_log_writes_a_config_again_when_pbt_changes_it(tmp_path):
    """A killed PBT run is read back from results.jsonl: each trial with the config it ran with
    last, not the one it started with."""
    path = tmp_path / "results.jsonl"
    (tmp_path / "run.json").write_text(
        json.dumps({"experiment": "e", "metric": "score", "mode": "max", "searched": ["lr"]})
    )
    log = JsonlResults(RunLocation(path.parent), "e")
    a = trial("a", lr=0.1)
    for step in (1, 2):
        log.on_trial_result(0, [a], a, {"training_iteration": step, "score": float(step)})
    a.config = {"lr": 0.24}  # an exploit: Tune gives the trial a new config dict
    for step in (3, 4):
        log.on_trial_result(0, [a], a, {"training_iteration": step, "score": float(step)})
    rows = results_of(tmp_path)
    assert [r.get("config") for r in rows] == [{"lr": 0.1}, None, {"lr": 0.24}, None]
    (read,) = read_experiment(tmp_path).trials
    assert read.params == {"lr": 0.24}
    # resumed in a new process, and restored to iteration 3: the config comes again with it
    log = JsonlResults(RunLocation(path.parent), "e")
    log.on_trial_result(0, [a], a, {"training_iteration": 3, "score": 3.5})
    rows = results_of(tmp_path)
    assert [r.get("config") for r in rows] == [{"lr": 0.1}, None, {"lr": 0.24}]


def test_results_log_writes_a_config_changed_in_place_and_no_unchanged_one_again(tmp_path):
    """The config a row last wrote is compared with the trial's whatever its form: a config
    changed in its own dict is written again; one holding NaN, tuples or an array, unchanged,
    only once."""
    import numpy as np

    log = JsonlResults(RunLocation(tmp_path), "e")
    a = trial("a", lr=0.1, nested={"w": (1, 2)}, gap=float("nan"), grid=np.arange(3))
    for step in (1, 2, 3):
        if step == 3:
            a.config["nested"]["w"] = (1, 3)  # changed where it lies
        log.on_trial_result(0, [a], a, {"training_iteration": step, "score": float(step)})
    rows = results_of(tmp_path)
    written = [r.get("config") for r in rows]
    assert written[1] is None
    assert written[0]["nested"] == {"w": [1, 2]} and written[2]["nested"] == {"w": [1, 3]}
    assert written[0]["gap"] is None and written[0]["grid"] == [0, 1, 2]


def test_results_log_replaces_a_replay_after_a_resume_that_lost_an_exploit(tmp_path):
    """PBT exploited `a` at iteration 4 (Tune logs that row after the scheduler's decision, with
    the new config) and the driver was killed before Tune saved its state: resumed, `a` replays
    iteration 4 from its own checkpoint with the config from before the exploit. Taken for an
    exploit by its config, the replay was logged beside the row it repeats."""
    path = tmp_path / "results.jsonl"
    log = JsonlResults(RunLocation(path.parent), "e")
    a = trial("a", lr=0.1)
    for step in (1, 2, 3):
        log.on_trial_result(0, [a], a, {"training_iteration": step, "score": float(step)})
    a.config = {"lr": 0.7}  # the exploit, decided on iteration 4's result
    log.on_trial_result(0, [a], a, {"training_iteration": 4, "score": 4.0})
    resumed = JsonlResults(RunLocation(path.parent), "e")  # a new driver process
    a.config = {"lr": 0.1}  # as Tune saved it, before the exploit
    resumed.on_trial_result(0, [a], a, {"training_iteration": 4, "score": 4.5})
    rows = results_of(tmp_path)
    assert [(r["training_iteration"], r["score"]) for r in rows] == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4.5),
    ]
    assert [r.get("config") for r in rows] == [{"lr": 0.1}, None, None, None]
    (read,) = read_experiment(tmp_path).trials
    assert read.config == {"lr": 0.1} and read.iterations == 4


def test_results_log_replaces_the_iterations_a_pbt_exploit_moves_a_trial_back_over(tmp_path):
    """Moved onto another trial's iteration-2 checkpoint at iteration 4, a trial reports
    iteration 3 again: its rows from 3 on are replaced, its own rows before stay, and the
    replayed row carries the config it now runs with."""
    path = tmp_path / "results.jsonl"
    log = JsonlResults(RunLocation(path.parent), "e")
    a, b = trial("a", lr=0.1), trial("b", lr=0.5)
    for step in (1, 2, 3):
        log.on_trial_result(0, [a], a, {"training_iteration": step, "score": float(step)})
        log.on_trial_result(0, [b], b, {"training_iteration": step, "score": 5.0 + step})
    a.config = {"lr": 0.24}
    log.on_trial_result(0, [a], a, {"training_iteration": 4, "score": 4.0})
    log.on_trial_result(0, [a], a, {"training_iteration": 3, "score": 9.0})
    rows = [r for r in results_of(tmp_path) if r["trial_id"] == "a"]
    assert [(r["training_iteration"], r["score"]) for r in rows] == [(1, 1), (2, 2), (3, 9)]
    assert rows[-1]["config"] == {"lr": 0.24}
    assert [r["score"] for r in results_of(tmp_path) if r["trial_id"] == "b"] == [6.0, 7.0, 8.0]


def test_results_log_writes_non_finite_numbers_as_valid_json(tmp_path):
    path = tmp_path / "results.jsonl"
    log = JsonlResults(RunLocation(path.parent), "e")
    a = trial("a")
    log.on_trial_result(0, [a], a, {"training_iteration": 1, "loss": float("nan")})
    (row,) = results_of(tmp_path)  # strict JSON
    assert row["loss"] is None


@pytest.mark.parametrize(
    ("reported", "kept"),
    [
        pytest.param(Decimal("0.5"), 0.5, id="decimal"),
        pytest.param(Fraction(1, 4), 0.25, id="fraction"),
        pytest.param(np.float32(0.5), 0.5, id="numpy-float"),
        pytest.param(np.int64(3), 3, id="numpy-int"),
        pytest.param((-1) ** 0.5, str((-1) ** 0.5), id="complex"),
    ],
)
def test_a_result_reaches_tunes_loop_with_ints_and_floats_or_text(reported, kept):
    tunes = Trial("f", stub=True)
    for step in (1, 2):  # Tune averages a number over results: the second failed
        result = {"training_iteration": step, "acc": reported, "val": {"acc": reported}}
        PlainNumbers().on_trial_result(0, [tunes], tunes, result)
        tunes.update_last_result(result)
        assert (result["acc"], result["val"]["acc"]) == (kept, kept)
        assert type(result["acc"]) in (int, float, str, np.int64)


# ---- read_experiment ----------------------------------------------------------------------------


def write_run(folder: Path, rows, scope="last", journal=(), mode="max"):
    folder.mkdir(parents=True)
    run = {"experiment": "e", "metric": "score", "mode": mode, "scope": scope, "searched": ["x"]}
    (folder / "run.json").write_text(json.dumps(run))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))


CURVES = [
    {"trial_id": "a", "training_iteration": 1, "score": 9.0, "config": {"x": 1}},
    {"trial_id": "a", "training_iteration": 2, "score": 1.0},
    {"trial_id": "b", "training_iteration": 1, "score": 4.0, "config": {"x": 2}},
    {"trial_id": "b", "training_iteration": 2, "score": 5.0},
    {"trial_id": "b", "training_iteration": 3},  # an RLlib iteration without the metric
]


@pytest.mark.parametrize(("scope", "best", "score"), [("last", "b", 5.0), ("all", "a", 9.0)])
def test_read_experiment_ranks_by_the_runs_scope(tmp_path, scope, best, score):
    done = [{"trial_id": t, "status": "TERMINATED"} for t in "ab"]
    write_run(tmp_path / "e", CURVES, scope, done)
    exp = read_experiment(tmp_path / "e")
    assert exp.scope == scope and exp.best_trial.trial_id == best
    assert exp.best_trial.score == score
    b = next(t for t in exp.trials if t.trial_id == "b")
    assert (b.last, b.iterations, b.params) == (5.0, 3, {"x": 2})  # last *reported* value


def test_read_experiment_of_a_run_killed_after_a_nan_marks_the_trial_failed(tmp_path):
    rows = [
        {"trial_id": "a", "training_iteration": 1, "score": 1.0, "config": {"x": 1}},
        {"trial_id": "a", "training_iteration": 2, "score": None},  # NaN, as JSON writes it
    ]
    write_run(tmp_path / "e", rows)
    (a,) = read_experiment(tmp_path / "e").trials
    assert a.status == "ERROR" and a.failure.cause == "non-finite metric"


def rows_at(*steps, trial_id="a"):
    """Result rows of one trial at `steps`; a step given as (iteration, tag) tags its row."""
    out = []
    for step in steps:
        it, tag = step if isinstance(step, tuple) else (step, "")
        out.append({"trial_id": trial_id, "training_iteration": it, "tag": tag})
    return out


@pytest.mark.parametrize(
    ("rows", "kept"),
    [
        pytest.param(rows_at(1, 2, 3), rows_at(1, 2, 3), id="no-replay"),
        pytest.param(
            rows_at(1, 2, 3, 4, (4, "r")), rows_at(1, 2, 3, (4, "r")), id="resumed-at-a-logged-one"
        ),
        pytest.param(
            rows_at(1, 2, 3, 4, (3, "r"), (4, "r"), (5, "r")),
            rows_at(1, 2, (3, "r"), (4, "r"), (5, "r")),
            id="moved-back-by-pbt",
        ),
        pytest.param(
            rows_at(1, 2, 3, 4, 5, (3, "r")), rows_at(1, 2, (3, "r")), id="killed-after-a-replay"
        ),
        pytest.param(
            [*rows_at(1, 2), *rows_at(1, 2, trial_id="b"), *rows_at((2, "r"), 3)],
            [*rows_at(1), *rows_at(1, 2, trial_id="b"), *rows_at((2, "r"), 3)],
            id="other-trials-untouched",
        ),
        pytest.param(
            [*rows_at(1, 2), {"trial_id": "a", "note": 1}, *rows_at((2, "r"))],
            [*rows_at(1), {"trial_id": "a", "note": 1}, *rows_at((2, "r"))],
            id="a-row-without-iteration-stays",
        ),
    ],
)
def test_results_are_read_one_row_per_trial_and_iteration_the_last_winning(rows, kept):
    """As the writer keeps them, and as an older version's file (a replay logged twice) reads."""
    from tune_app.rundir.layout import latest_results

    assert latest_results(rows) == kept


def test_a_killed_and_resumed_pbt_run_logged_by_an_older_version_reads_once(tmp_path):
    """An older writer logged a replayed iteration beside the row it repeats, and PBT's clone
    decided again after the resume beside the first: read back, each is there once."""
    rows = [
        {"trial_id": "a", "training_iteration": 1, "score": 1.0, "config": {"x": 0.1}},
        {"trial_id": "a", "training_iteration": 2, "score": 2.0, "config": {"x": 0.7}},
        {"trial_id": "a", "training_iteration": 2, "score": 2.5, "config": {"x": 0.1}},
        {"trial_id": "a", "training_iteration": 3, "score": 3.0},
    ]
    write_run(tmp_path / "e", rows)
    clones = [
        {"trial_id": "a", "from_trial": "b", "iteration": 2, "changed": {"x": [0.1, 0.7]}},
        {"trial_id": "c", "from_trial": "b", "iteration": 2, "changed": {"x": [0.3, 0.4]}},
        {"trial_id": "a", "from_trial": "d", "iteration": 2, "changed": {"x": [0.1, 0.9]}},
    ]
    (tmp_path / "e" / "clones.jsonl").write_text("".join(json.dumps(c) + "\n" for c in clones))
    exp = read_experiment(tmp_path / "e")
    assert [s["score"] for s in exp.history["a"]] == [1.0, 2.5, 3.0]
    (a,) = exp.trials
    assert a.iterations == 3 and a.params == {"x": 0.1} and a.best == 3.0
    assert [(c.trial_id, c.from_trial) for c in exp.clones] == [("c", "b"), ("a", "d")]


# ---- summarize ----------------------------------------------------------------------------------


def plan_of(tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    (ep,) = make_plan(spec.load(path), cpus=2, storage_path=str(tmp_path / "out")).experiments
    ep.folder.local.mkdir(parents=True)
    return ep


def result(trial_id, scores, error=None, **last):
    frame = pd.DataFrame({"score": scores, "training_iteration": range(1, len(scores) + 1)})
    metrics = {"trial_id": trial_id, "training_iteration": len(scores), **last}
    if scores and scores[-1] is not None:
        metrics["score"] = scores[-1]
    return SimpleNamespace(
        metrics=metrics,
        metrics_dataframe=frame,
        error=error,
        path=f"/x/train_{trial_id}_0",
        config={"case": trial_id},
    )


@pytest.mark.parametrize(("scope", "best"), [("", "b"), ("scope: all", "a")])
def test_summarize_picks_the_best_under_the_scope(tmp_path, scope, best):
    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope=scope))
    grid = [result("a", [9.0, 1.0]), result("b", [4.0, 5.0, None])]
    summary = summarize(ep, grid, 1.0)
    assert summary.best.trial_id == best
    metrics = {t.trial_id: t.score for t in summary.trials}
    assert metrics == ({"a": 1.0, "b": 5.0} if not scope else {"a": 9.0, "b": 5.0})
    assert summary.counts == {"TERMINATED": 2} and summary.missing == {}


def test_summarize_scores_from_the_apps_log_when_tunes_history_stops_short(tmp_path):
    """A trial that finished after Tune's last save before a kill comes back from Tune with
    the history it had then: its score was a value from the middle of its run, below its last."""
    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope=""))
    rows = [{"trial_id": "a", "training_iteration": i, "score": 5.0 * i} for i in (1, 2, 3, 4)]
    (ep.folder.local / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stale = result("a", [5.0, 10.0], score=20.0)  # progress.csv as saved; the last result now
    stale.metrics["training_iteration"] = 4
    (trial,) = summarize(ep, [stale], 1.0).trials
    assert (trial.score, trial.last, trial.best, trial.iterations) == (20.0, 20.0, 20.0, 4)


def test_summarize_reports_a_crash_not_missing_keys(tmp_path):
    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope=""))
    crashed = SimpleNamespace(
        metrics={},
        metrics_dataframe=None,
        error=ValueError("bad env"),
        path="/x/train_ccccc_00000_0_case=a",
        config={},
    )
    summary = summarize(ep, [crashed], 1.0)
    assert summary.missing == {}  # no trial reported anything: nothing is "never reported"
    assert summary.failed == {"ValueError": ["ccccc_00000"]}
    assert summary.trials[0].error == "ValueError: bad env"


def test_summarize_counts_a_nan_metric_as_a_failure(tmp_path):
    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope=""))
    summary = summarize(ep, [result("a", [1.0, float("nan")])], 1.0)
    (a,) = summary.trials
    assert a.status == "ERROR" and a.cause == "non-finite metric"


@pytest.mark.parametrize(
    ("values", "unusable", "note"),
    [
        pytest.param(["0.93", "0.95"], "a string ('0.93') by trial a", None, id="text"),
        pytest.param([[0.9], [0.8]], "a list ([0.9]) by trial a", None, id="a-list"),
        pytest.param(
            ["n/a", 0.5, "n/a"],
            None,
            "metric 'score' was not a number in 2 of 3 results that held it (first a string "
            "('n/a') by trial a); those results were skipped",
            id="text-and-numbers",
        ),
        pytest.param([0.5, None], None, None, id="nan-is-a-number-diverged"),
    ],
)
def test_summarize_tells_a_metric_never_a_number_from_one_sometimes_text(
    tmp_path, values, unusable, note
):
    from tune_app.rundir.outcome import missing_keys_error

    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope=""))
    rows = [{"trial_id": "a", "training_iteration": i, "score": v} for i, v in enumerate(values, 1)]
    (ep.folder.local / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = summarize(ep, [result("a", values)], 1.0)
    assert summary.unusable == ({"metric": unusable} if unusable else {})
    assert summary.notes == ([note] if note else [])
    if unusable:
        assert summary.best is None
        assert str(missing_keys_error(ep, summary)) == (
            f"experiments.e.metric: 'score' was reported as {unusable}, never as a number, so "
            "it can never stop or rank a trial; report it as an int or a float"
        )
    elif note:  # the numbers rank it; the text is skipped, as a result without the key is
        (trial,) = summary.trials
        assert (trial.score, trial.last, trial.best) == (0.5, 0.5, 0.5)


# ---- the stopper --------------------------------------------------------------------------------


def test_stopper_stops_at_thresholds_and_on_divergence():
    stop = SpecStopper({"score": 10.0}, metric="score")
    assert not stop("a", {"score": 3.0, "training_iteration": 1})
    assert stop("a", {"score": 10.0, "training_iteration": 2})
    assert stop("b", {"score": math.nan})  # diverged
    assert not stop("c", {"score": "12", "training_iteration": 1})  # text reaches nothing
    assert not stop("c", {"score": [12.0], "training_iteration": 2})
    assert not stop.stop_all()


@pytest.mark.parametrize(
    ("reports", "ends"),
    [
        pytest.param([{}, {"score": 1.0}] * 5, False, id="every-second-result"),
        pytest.param([{}] + [{"score": 1.0}] * 9, False, id="warm-up-without-it"),
        pytest.param([{}] * 9 + [{"score": 1.0}], False, id="first-in-the-last-of-grace"),
        pytest.param([{}] * 10, True, id="never-reported"),
        pytest.param([{"score": "0.9"}] * 10, True, id="never-a-number"),
        pytest.param([{"score": "n/a"}] * 9 + [{"score": 0.5}], False, id="text-then-a-number"),
    ],
)
def test_the_stopper_ends_the_search_on_a_key_no_result_held_in_its_grace(reports, ends):
    """A key reported now and then counts once any result held it as a number; one that none
    held by a trial's `grace`-th result ends the search (a trainable looping until its stop
    criteria would run forever on a misspelt stop key)."""
    stop = SpecStopper({"score": 100.0}, metric="score", grace=10)
    stopped = [stop("a", {**r, "training_iteration": i}) for i, r in enumerate(reports, 1)]
    assert stop.stop_all() is ends
    assert stopped == [False] * (len(reports) - 1) + [ends]


def test_a_key_any_trial_reported_counts_for_every_trial():
    stop = SpecStopper({}, metric="score", grace=2)
    assert not stop("a", {"training_iteration": 1, "score": 1.0})
    assert not stop("b", {"training_iteration": 1}) and not stop("b", {"training_iteration": 2})
    assert not stop.stop_all()


def test_a_stopper_pickled_before_the_grace_resumes():
    """Tune pickles the stopper with the Tuner; a run begun with the first-result guard, resumed,
    has none of the new fields."""
    stop = SpecStopper({}, metric="score")
    old = {"criteria": {}, "metric": "score", "required": ["score"], "seen": set()}
    stop.__setstate__({**old, "missing": False})
    assert not stop("a", {"training_iteration": 1}) and not stop.stop_all()


def test_stopper_waits_for_rllibs_late_keys_and_stops_on_a_nan_loss():
    stop = SpecStopper(
        {"env_runners/episode_return_mean_smoothed": 100.0},
        metric="env_runners/episode_return_mean_smoothed",
        late=True,
    )
    assert not stop("a", {"env_runners": {"num_episodes": 0}, "training_iteration": 1})
    assert not stop.stop_all()
    assert stop("a", {"learners": {"default_policy": {"total_loss": math.inf}}})


def test_the_summary_is_read_back_as_the_same_trial_outcomes(tmp_path):
    """The runner writes `RunSummary.to_json()`; `analyze` reads the same objects back, so the
    two can never disagree about a trial's score, status or the best trial."""
    from tune_app.rundir.files import write_json
    from tune_app.rundir.records import RunSummary

    user_module("curves.py", tmp_path)
    ep = plan_of(tmp_path, SPEC.format(scope="scope: all"))
    grid = [
        result("a", [9.0, 1.0]),
        result("b", [4.0, 5.0, None]),
        result("c", [2.0], error=ValueError("bad")),
    ]
    summary = summarize(ep, grid, 3.5)
    write_json(ep.folder.local / "summary.json", summary.to_json())
    assert RunSummary.from_json(summary.to_json()) == summary
    read = read_experiment(ep.folder.local)
    assert sorted(read.trials, key=lambda t: t.trial_id) == summary.trials
    assert read.best_trial == summary.best and summary.best.trial_id == "a"
    assert read.failed_by_cause()["ValueError"][0].error == "ValueError: bad"
    assert (summary.best.last, summary.best.best) == (1.0, 9.0)
    assert read.finished and read.counts == {"TERMINATED": 2, "ERROR": 1}


@pytest.mark.parametrize("mode", ["max", "min"])
def test_best_so_far_is_a_staircase_that_ends_at_the_summarys_best(tmp_path, mode):
    """The report's 'best so far' took the best raw value ever seen (9 here, where the header's
    best, scope last, is 5), then each trial's score so far, which rose and fell; and a failed
    trial's values counted like any other. A trial counts from its last result, with its
    score: never worse, and ending at the summary's best."""
    from tune_app.readback import plots

    def row(trial, it, score, at, x=None):
        found = {"trial_id": trial, "training_iteration": it, "score": score, "logged_at": at}
        return {**found, "config": {"x": x}} if x is not None else found

    sign = 1.0 if mode == "max" else -1.0
    rows = [row("a", 1, 9.0, 1.0, 1), row("b", 1, 4.0, 2.0, 2), row("a", 2, 1.0, 3.0)]
    rows += [row("c", 1, 50.0, 3.5, 3), row("b", 2, 5.0, 4.0), row("d", 1, 3.0, 5.0, 4)]
    rows = [{**r, "score": sign * r["score"]} for r in rows]
    journal = [{"trial_id": "c", "status": "ERROR"}]
    write_run(tmp_path / "e", rows, journal=journal, mode=mode)
    exp = read_experiment(tmp_path / "e")
    figure = plots.best_over_time(exp)
    (line,) = [ln for ln in figure.axes[0].lines if "best score so far" in ln.get_label()]
    # a ends at 1, c fails (50, left behind), b ends at 5, d at 3 (not better)
    assert list(line.get_ydata()) == [sign * v for v in (1.0, 1.0, 5.0, 5.0)]
    assert exp.best_trial.trial_id == "b" and exp.best_trial.score == sign * 5.0


def test_a_cloud_run_is_read_from_a_copy_of_the_process_never_its_staging_folder(
    tmp_path, monkeypatch
):
    """The staging folder is the writer's (a live run's on this machine, perhaps); each read
    of a URI replaces one private copy, so reading again and again keeps one."""
    from tune_app.rundir import storage

    monkeypatch.setenv("TUNE_APP_STAGING", str(tmp_path / "staging"))
    uri = "s3://bucket/searches/e"
    copy = storage.reading_dir(uri)
    assert copy == storage.reading_dir(uri) != storage.reading_dir("s3://bucket/other/e")
    assert tmp_path not in copy.parents and copy.name == storage.staging_dir(uri).name


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("broken", ["a", "b"])
def test_a_stopper_of_several_objectives_stops_a_trial_when_any_is_not_finite(broken, value):
    from tune_app.divergence import diverged
    from tune_app.tuner import SpecStopper

    stop = SpecStopper({}, metric=("a", "b"))
    assert not stop("t", {"a": 1.0, "b": 2.0})
    assert stop("t", {"a": 1.0, "b": 2.0, broken: value})
    found = diverged({"a": 1.0, "b": 2.0, broken: value}, ("a", "b"))
    assert found is not None and found[0] == broken


@pytest.mark.parametrize(
    ("samples", "period"), [(10, "1"), (300, "3"), (999, "9.99"), (1000, "auto"), (10_000, "auto")]
)
def test_tune_saves_its_state_every_second_for_small_searches_and_by_its_own_rule_for_large(
    tmp_path, monkeypatch, samples, period
):
    """Every trial's state is in each save (10 KB a trial): from 1,000 trials Tune's own rule
    (10 s, or 19 times what a save took) keeps saving from growing with the trials."""
    from tune_app import tuner

    monkeypatch.setattr(tuner, "_USER_STATE_PERIOD", None)
    user_module("curves.py", tmp_path)
    ep = plan_of(
        tmp_path,
        f"e:\n  run: curves:train\n  metric: score\n  mode: max\n  num_samples: {samples}\n"
        "  config: {x: {uniform: [0, 1]}}\n",
    )
    assert tuner.state_period(ep) == period
