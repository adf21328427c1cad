"""The progress line's time left under early stopping: a trial's expected length by the
scheduler's plan (ASHA's rungs, HyperBand's brackets), or "unknown" where no plan says; FIFO and
PBT keep the estimate from trials done. Pure: no Ray is started."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tune_app import eta, progress
from tune_app.methods import (
    SCHEDULERS,
    AshaOptions,
    FifoOptions,
    HyperBandOptions,
    MedianOptions,
    PbtOptions,
)
from tune_app.progress.view import describe


def _trial(trial_id: str, status: str, iterations: int) -> SimpleNamespace:
    result = {"training_iteration": iterations} if iterations else {}
    return SimpleNamespace(status=status, config={}, last_result=result, trial_id=trial_id)


# ASHA, grace_period 1, reduction factor 3, max_t 81: rungs at 1, 3, 9 and 27; 2/3 of the
# trials end at 1, 2/9 at 3, 2/27 at 9, 2/81 at 27, 1/81 run to 81.
ASHA_ENDS = ((1.0, 2 / 3), (3.0, 2 / 9), (9.0, 2 / 27), (27.0, 2 / 81), (81.0, 1 / 81))
ASHA_MEAN = sum(x * p for x, p in ASHA_ENDS)  # 11/3 iterations a trial


@pytest.mark.parametrize(
    ("plan", "ends"),
    [
        pytest.param(eta.asha(1, 81, 3), ASHA_ENDS, id="asha"),
        pytest.param(
            eta.asha(1, 81, 3, bound=10),
            ((1.0, 2 / 3), (3.0, 2 / 9), (9.0, 2 / 27), (10.0, 1 / 27)),
            id="asha-stop-before-max_t",
        ),
        # s_max 3: bracket 0 runs 3 trials to 9; bracket 1 five to 3, two on to 9; bracket 2
        # nine to 1, three on to 3, one on to 9: 17 trials, 6 ending at 1, 5 at 3, 6 at 9.
        pytest.param(
            eta.hyperband(9, 3), ((1.0, 6 / 17), (3.0, 5 / 17), (9.0, 6 / 17)), id="hyperband"
        ),
    ],
)
def test_a_plan_gives_where_trials_end_and_how_often(plan, ends):
    assert [x for x, _ in plan.lengths] == [x for x, _ in ends]
    assert [p for _, p in plan.lengths] == pytest.approx([p for _, p in ends])
    assert sum(p for _, p in plan.lengths) == pytest.approx(1.0)


def test_asha_brackets_weigh_as_tune_draws_them():
    """Tune draws bracket s with a weight of e^(its rung count): 4 and 3 rungs here."""
    plan = eta.asha(1, 27, 3, brackets=2)
    one, two = eta.asha(1, 27, 3).expected(), eta.asha(3, 27, 3).expected()
    weight = 2.718281828459045
    assert plan.expected() == pytest.approx((weight * one + two) / (weight + 1))


def test_a_running_trial_is_expected_to_end_at_a_rung_it_has_not_passed():
    plan = eta.asha(1, 81, 3)
    assert plan.expected() == pytest.approx(11 / 3)
    # past rungs 1 and 3: the ends at 9, 27 and 81, in proportion 18 : 6 : 3
    assert plan.expected(5) == pytest.approx((9 * 18 + 27 * 6 + 81 * 3) / 27)
    assert plan.expected(81) == 81 and plan.expected(90) == 90  # nothing more to run


def test_asha_eta_counts_the_plans_iterations_not_every_trial_to_max_t():
    """Mid-search: the time left is the iterations the plan expects of the running trials
    (by the rungs they passed) and of those not started, at the rate so far."""
    plan = SCHEDULERS["asha"].trial_lengths(
        AshaOptions(grace_period=1, max_t=81, reduction_factor=3), None
    )
    assert plan == eta.asha(1, 81, 3)
    callback = progress.ProgressCallback("e", "loss", "min", (), plan=plan)
    callback.setup(total_num_samples=200)
    callback._start -= 51.0
    trials = [_trial(f"d{i}", "TERMINATED", 1) for i in range(6)]  # cut at the first rung
    trials += [_trial("d6", "TERMINATED", 3)]  # cut at the second
    trials += [_trial(f"r{i}", "RUNNING", i % 4 + 1) for i in range(8)]
    trials += [_trial("p", "PENDING", 0)]
    snap = callback.snapshot(trials)

    done = 6 * 1 + 3 + sum(i % 4 + 1 for i in range(8))  # 29 iterations in elapsed_s
    running = [plan.expected(i % 4 + 1) - (i % 4 + 1) for i in range(8)]
    left = sum(running) + (200 - 16 + 1) * ASHA_MEAN  # 184 not created, 1 pending
    assert snap.remaining_s == pytest.approx(snap.elapsed_s * left / done)
    # Within the plan's budget: the search's iterations, run and left, are close to 200 trials
    # at the plan's mean length (the running trials have passed rungs: a little more), far from
    # every trial run to max_t.
    assert 200 * ASHA_MEAN <= done + left <= 1.1 * 200 * ASHA_MEAN
    assert snap.remaining_s < snap.elapsed_s * (200 * 81 - done) / done / 10
    line = describe(snap)
    assert f"~{eta.clock(snap.remaining_s)} left" in line
    assert eta.UNKNOWN not in line


def test_early_in_an_asha_search_the_eta_is_not_the_trials_done_share():
    """The report's case: 51 s into a 200-trial search that ASHA cuts after 5 iterations, one
    trial had ended, and the share of trials done said ~2h49m left; the plan expects about
    13.7 iterations a trial (rungs at 5, 15, 45; max_t 100)."""
    plan = eta.asha(5, 100, 3)
    mean = 5 * 2 / 3 + 15 * 2 / 9 + 45 * 2 / 27 + 100 / 27
    assert plan.expected() == pytest.approx(mean)
    callback = progress.ProgressCallback("e", "loss", "min", (), plan=plan)
    callback.setup(total_num_samples=200)
    callback._start -= 51.0
    trials = [_trial("cut", "TERMINATED", 5)] + [_trial(f"r{i}", "RUNNING", 4) for i in range(8)]
    snap = callback.snapshot(trials)
    done = 5 + 8 * 4
    left = 8 * (mean - 4) + 191 * mean
    assert snap.remaining_s == pytest.approx(snap.elapsed_s * left / done)
    # The plan's budget: the cut trial's 5 iterations and 199 trials at the plan's mean length.
    assert done + left == pytest.approx(5 + 199 * mean)
    old = progress.ProgressCallback("e", "loss", "min", ())  # as before: FIFO's estimate
    old.setup(total_num_samples=200)
    old._start -= 51.0
    assert old.snapshot(trials).remaining_s > 2.5 * snap.remaining_s


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(AshaOptions(time_attr="time_total_s", max_t=600), id="asha-in-seconds"),
        pytest.param(HyperBandOptions(time_attr="time_total_s"), id="hyperband-in-seconds"),
        pytest.param(MedianOptions(), id="median"),
    ],
)
def test_without_a_plan_in_iterations_the_eta_is_unknown(options):
    plan = SCHEDULERS[options.type].trial_lengths(options, None)
    assert plan is not None and not plan.known
    callback = progress.ProgressCallback("e", "loss", "min", (), plan=plan)
    callback.setup(total_num_samples=10)
    snap = callback.snapshot([_trial("a", "TERMINATED", 2), _trial("b", "RUNNING", 1)])
    assert snap.remaining_s is None and snap.unknown_eta
    line = describe(snap)
    assert line.endswith(eta.UNKNOWN) and " left" not in line
    callback.setup(total_num_samples=2)
    done = describe(callback.snapshot([_trial(str(i), "TERMINATED", 1) for i in "ab"]))
    assert eta.UNKNOWN not in done  # nothing left: nothing to estimate


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(FifoOptions(), id="fifo"),
        pytest.param(PbtOptions(hyperparam_mutations={"lr": [0.1, 0.2]}), id="pbt"),
    ],
)
def test_fifo_and_pbt_keep_the_estimate_from_trials_done(options):
    """No trial is cut early: the share of trials done, a running one by its iterations out
    of the stop bound, as before."""
    plan = SCHEDULERS[options.type].trial_lengths(options, 10)
    assert plan is None
    callback = progress.ProgressCallback("e", "loss", "min", (), iterations=10, plan=plan)
    callback.setup(total_num_samples=4)
    trials = [_trial("a", "TERMINATED", 10), _trial("b", "RUNNING", 5), _trial("c", "PENDING", 0)]
    snap = callback.snapshot(trials)
    assert snap.remaining_s == pytest.approx(snap.elapsed_s * (4 - 1.5) / 1.5)
    assert not snap.unknown_eta


@pytest.mark.parametrize(
    ("scheduler", "ends"),
    [
        pytest.param(
            "{type: asha, grace_period: 1, max_t: 81, reduction_factor: 3}", ASHA_ENDS, id="asha"
        ),
        pytest.param("{type: median}", (), id="median"),
        pytest.param("fifo", None, id="fifo"),
    ],
)
def test_run_json_keeps_the_plan_the_progress_line_counts_with(
    write_spec, tmp_path, scheduler, ends
):
    """The live page reads the run's plan from run.json: the one the progress line is given."""
    from tune_app import spec
    from tune_app.plan.make import make_plan
    from tune_app.rundir.write import Invocation, read_run_record, write_run_files

    text = (
        f"metric: mean_accuracy\nmode: max\nscheduler: {scheduler}\n"
        "experiments:\n  e:\n    run: my_func\n    config: {alpha: 0.5, beta: 0.1}\n"
    )
    plan = make_plan(spec.load(write_spec(text)), cpus=2, storage_path=str(tmp_path / "o"))
    (ep,) = plan.experiments
    assert _flat(ep.trial_ends.lengths if ep.trial_ends else None) == pytest.approx(_flat(ends))
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run"], plan.spec.file))
    record = read_run_record(ep.folder)
    assert record.trials == ep.trials and _flat(record.trial_ends) == pytest.approx(_flat(ends))


def _flat(ends: eta.Lengths | None) -> list[float] | None:
    return None if ends is None else [v for pair in ends for v in pair]


@pytest.mark.parametrize(
    ("bound", "each"),
    [
        pytest.param(3, 3, id="whole"),
        pytest.param(2.5, 3, id="fraction"),  # a trial stops at its first result >= 2.5: the 3rd
        pytest.param(0, 1, id="zero"),  # at its first result, whatever a bound below 1
        pytest.param(-1, 1, id="negative"),
    ],
)
def test_a_stop_on_training_iteration_bounds_each_trial_at_the_result_it_stops_at(
    write_spec, tmp_path, bound, each
):
    from tune_app import spec
    from tune_app.plan.make import make_plan

    text = (
        "e: {run: my_func, num_samples: 2, config: {alpha: 0.5, beta: 1}, "
        f"stop: {{training_iteration: {bound}}}}}\n"
    )
    plan = make_plan(spec.load(write_spec(text)), cpus=2, storage_path=str(tmp_path / "o"))
    (ep,) = plan.experiments
    assert (ep.stop_iterations, ep.iterations) == (each, 2 * each)
