"""The app's HyperBands fill each bracket once, however fast its trials end.

Tune counts a bracket as full only while its trials are alive, so when trials are made one at a
time as others end (BOHB's searcher, or any search under a concurrency limit), the bracket that
runs its trials to max_t takes every later trial (ray-project/ray#12536). These drive the
schedulers' own hooks with stand-in trials: no Ray needed.
"""

from __future__ import annotations

import pytest
from ray.tune.experiment import Trial
from ray.tune.schedulers import HyperBandForBOHB, HyperBandScheduler

from tune_app.ray_internals.hyperband import ResumableHyperBand, ResumableHyperBandForBOHB
from tune_app.ray_internals.seeded import SeededHyperBand

from .conftest import BOHB_RANGES, refused
from .test_sparse import Controller, stand_in


class StandIn:
    """What the scheduler reads of a trial when it is added: its status."""

    status = Trial.PENDING


def milestones(scheduler: HyperBandScheduler, ended_at_once: int) -> list[tuple[int, int]]:
    """Add 14 trials one at a time; the `ended_at_once` first of each bracket's trials that run
    to max_t end before the next trial is made. Returns (band, first milestone) per trial."""
    placed = []
    for _ in range(14):
        trial = StandIn()
        scheduler.on_trial_add(None, trial)  # type: ignore[arg-type]
        bracket, band = scheduler._trial_info[trial]
        placed.append((band, bracket._r))
        if bracket._r == 3 and ended_at_once:  # runs straight to max_t, then ends
            scheduler.on_trial_complete(None, trial, {"training_iteration": 3})  # type: ignore[arg-type]
    return placed


@pytest.mark.parametrize(
    "ours, tunes, first",
    [
        # max_t 3, factor 3: brackets of 2 trials at milestone 3 and of 3 at milestone 1; Tune's
        # HyperBand makes the full-length bracket first, BOHB's the halving one.
        (ResumableHyperBand, HyperBandScheduler, [3, 3, 1, 1, 1]),
        (ResumableHyperBandForBOHB, HyperBandForBOHB, [1, 1, 1, 3, 3]),
    ],
)
def test_a_bracket_whose_trials_end_fast_still_fills_once(ours, tunes, first):
    options = {"metric": "m", "mode": "max", "max_t": 3, "reduction_factor": 3}
    placed = milestones(ours(**options), ended_at_once=True)
    band = [(0, r) for r in first]
    assert placed == band + [(1, r) for r in first] + [(2, r) for r in first[:4]]
    # Tune's own scheduler: the full-length bracket never fills and takes every later trial.
    theirs = milestones(tunes(**options), ended_at_once=True)
    assert [band for band, _ in theirs] == [0] * 14
    assert [r for _, r in theirs].count(3) > 2


def test_brackets_still_fill_in_order_when_no_trial_ends_early():
    options = {"metric": "m", "mode": "max", "max_t": 3, "reduction_factor": 3}
    assert milestones(ResumableHyperBand(**options), 0) == milestones(
        HyperBandScheduler(**options), 0
    )


def test_a_finished_trial_joins_no_bracket_on_resume():
    scheduler = ResumableHyperBand(metric="m", mode="max", max_t=3, reduction_factor=3)
    done = StandIn()
    done.status = Trial.TERMINATED
    scheduler.on_trial_add(None, done)  # type: ignore[arg-type]
    assert done not in scheduler._trial_info
    scheduler.on_trial_complete(None, done, {})  # type: ignore[arg-type]  # no KeyError


LIMITED = """
metric: mean_accuracy
mode: max
search: {search}
scheduler: {{type: hyperband, max_t: 9}}
experiments:
  e:
    run: my_func
    num_samples: 17
    max_concurrent_trials: {limit}
    stop: {{training_iteration: 9}}
    config: {{alpha: {{uniform: [0.1, 1.0]}}, beta: 1}}
"""


def test_a_concurrency_limit_under_hyperband_is_refused(cli, write_spec, tmp_path):
    """A trial waiting at a rung still counts against the limit, so its bracket is halved among
    the few trials let in at once: with 2 at a time, all 17 trials ran to max_t."""
    spec_file = write_spec(LIMITED.format(search="random", limit=2))
    words = "experiments.e.max_concurrent_trials", "lets it hold 2 of 17", "scheduler asha"
    refused(cli("validate", spec_file), *words)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("search", "limit", "scheduler"),
    [
        ("random", 17, "hyperband"),
        pytest.param("bohb", 2, "hyperband", marks=BOHB_RANGES),
        ("random", 2, "asha"),
    ],
)
def test_limits_that_do_not_break_halving_are_kept(cli, write_spec, search, limit, scheduler):
    """A limit that holds every trial; BOHB's HyperBand, which waits for its brackets to fill;
    ASHA, which halves asynchronously."""
    text = LIMITED.format(search=search, limit=limit).replace("hyperband", scheduler)
    result = cli("validate", write_spec(text))
    assert result.code == 0, result.err
    assert "17 (num_samples 17)" in result.out


@pytest.mark.parametrize("cls", [ResumableHyperBand, SeededHyperBand])
def test_a_trial_still_saving_its_pause_is_stopped_when_its_bracket_finishes(cls):
    """Tune pauses a trial by saving it first: until the save returns, the trial is RUNNING and
    saving. Tune's bracket, when it finished, stopped the PAUSED trials only, so a trial whose
    save returned afterwards stayed PAUSED with no bracket to resume it, and the search hung."""
    band = cls(time_attr="t", max_t=8, reduction_factor=2)  # first bracket: 4 trials to t=8
    band.set_search_properties("score", "max")
    a, b, c = stand_in("a", 1), stand_in("b", 2), stand_in("c", 3)
    controller = Controller(band)
    for t in (a, b, c):
        band.on_trial_add(None, t)
        t.status = Trial.RUNNING
    assert band.on_trial_result(controller, a, {"t": 8, "score": 1.0}) == "PAUSE"
    a.status = Trial.PAUSED
    assert band.on_trial_result(controller, b, {"t": 8, "score": 2.0}) == "PAUSE"
    b.is_saving = True  # its pause is still saving
    assert band.on_trial_result(controller, c, {"t": 8, "score": 3.0}) == "STOP"
    assert sorted(controller.stopped) == ["a", "b"]
