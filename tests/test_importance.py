"""Parameter importance: a parameter the score depends on ranks above ones it does not, whatever
their kind; too little data is a note, not a number. Pure: no Ray, no run folder."""

from __future__ import annotations

import random

import pytest

from tune_app.readback.importance import MIN_TRIALS, importances
from tune_app.rundir.records import TrialOutcome


def outcome(i: int, score: float | None, **params) -> TrialOutcome:
    return TrialOutcome(f"t{i}", "TERMINATED", {}, score, 1, params=params)


def search(n: int, driver: str, seed: int = 0, **weights: float) -> list[TrialOutcome]:
    """`n` trials of three parameters (a number, a log-scale number, a category) whose score
    depends on `driver` (or on each parameter times its weight), plus a little noise."""
    rng = random.Random(seed)
    weights = weights or {driver: 1.0}
    trials = []
    for i in range(n):
        params = {
            "x": rng.uniform(0, 1),
            "lr": 10 ** rng.uniform(-5, -1),
            "layers": rng.choice([[16], [64, 64], [256, 256]]),
        }
        effects = {
            "x": 10 * params["x"],
            "lr": 5.0 if params["lr"] > 1e-3 else 0.0,
            "layers": 3.0 * len(params["layers"]),
        }
        score = sum(w * effects[k] for k, w in weights.items())
        trials.append(outcome(i, score + rng.gauss(0, 0.3), **params))
    return trials


@pytest.mark.parametrize("driver", ["x", "lr", "layers"])
def test_the_parameter_that_drives_the_score_ranks_first(driver):
    found = importances(search(30, driver), ["x", "lr", "layers"], log_scaled=["lr"])
    first, *rest = found.params
    assert first.param == driver and first.share > 0.6, found
    assert all(i.share < 0.25 for i in rest), found
    assert sum(i.share for i in found.params) == pytest.approx(1.0)
    assert found.trials == 30 and found.fit is not None and found.fit > 0.5 and not found.note


def test_a_stronger_effect_ranks_above_a_weaker_one_above_none():
    found = importances(search(40, "", x=1.0, layers=0.3), ["lr", "layers", "x"])
    assert [i.param for i in found.params] == ["x", "layers", "lr"], found
    assert found.params[1].share > 5 * found.params[2].share, found


def test_the_numbers_are_the_same_every_time():
    trials = search(20, "x", seed=3)
    assert importances(trials, ["x", "lr", "layers"]) == importances(trials, ["x", "lr", "layers"])


def test_trials_without_a_score_are_left_out():
    trials = search(MIN_TRIALS, "x") + [outcome(99, None, x=0.5, lr=1e-3, layers=[16])]
    assert importances(trials, ["x", "lr"]).trials == MIN_TRIALS


@pytest.mark.parametrize(
    ("trials", "params", "note"),
    [
        pytest.param(search(MIN_TRIALS - 1, "x"), ["x", "lr"], "Only 4 trials", id="too-few"),
        pytest.param(
            [outcome(i, 1.0, x=i) for i in range(8)], ["x"], "the same score", id="flat-score"
        ),
        pytest.param(search(10, "x"), [], "No parameter", id="nothing-searched"),
    ],
)
def test_too_little_to_learn_from_is_a_note(trials, params, note):
    found = importances(trials, params)
    assert found.params == () and note in found.note


def test_one_parameter_takes_the_whole_share_and_says_so():
    found = importances(search(10, "x"), ["x"])
    assert [(i.param, i.share) for i in found.params] == [("x", 1.0)]
    assert "only one parameter" in found.note.lower()


def test_a_forest_that_cannot_predict_the_score_says_so():
    rng = random.Random(1)
    trials = [
        outcome(i, rng.gauss(0, 1), x=rng.uniform(0, 1), y=rng.uniform(0, 1)) for i in range(12)
    ]
    found = importances(trials, ["x", "y"])
    assert found.fit is not None and found.fit <= 0
    assert "do not predict the score" in found.note
