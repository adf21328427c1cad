"""RLlib results as the app reads them: no-data NaNs dropped, divergence kept, returns smoothed
over the last N episodes across iterations. Pure: no Ray."""

from __future__ import annotations

import math
import random

import pytest

from tune_app.divergence import diverged
from tune_app.rllib.metrics import (
    SMOOTHED_LEN,
    SMOOTHED_RETURN,
    Smoother,
    drop_no_data,
)

NAN = float("nan")


def iteration(episodes, ret=NAN, length=NAN, loss=0.5, trained=32):
    """A result shaped as RLlib 2.60 reports it (nested groups)."""
    return {
        "training_iteration": 3,
        "env_runners": {
            "num_episodes": episodes,
            "episode_return_mean": ret,
            "episode_return_max": ret,
            "episode_len_mean": length,
            "agent_episode_return_mean": {"default_agent": ret},
            "num_env_steps_sampled": 5,
        },
        "learners": {
            "__all_modules__": {"num_trainable_parameters": NAN, "num_env_steps_trained": trained},
            "default_policy": {
                "qf_loss": loss,
                "num_module_steps_trained": trained,
                "num_trainable_parameters": NAN,
            },
        },
    }


def test_an_iteration_without_episodes_has_no_episode_keys_rather_than_nan():
    out = drop_no_data(iteration(0))
    runners = out["env_runners"]
    assert "episode_return_mean" not in runners and "agent_episode_return_mean" not in runners
    assert runners["num_env_steps_sampled"] == 5  # real numbers stay
    # RLlib's once-logged parameter counts are NaN every later iteration: dropped too.
    assert "num_trainable_parameters" not in out["learners"]["default_policy"]
    assert diverged(_flat(out), "env_runners/episode_return_mean") is None


def test_a_nan_return_over_finished_episodes_is_a_divergence():
    out = drop_no_data(iteration(4, ret=NAN))
    assert math.isnan(out["env_runners"]["episode_return_mean"])
    key, value = diverged(_flat(out), "env_runners/episode_return_mean")
    assert key == "env_runners/episode_return_mean" and math.isnan(value)


@pytest.mark.parametrize(
    ("trained", "expected"),
    [
        pytest.param(32, "learners/default_policy/qf_loss", id="trained-nan-loss-diverged"),
        pytest.param(0, None, id="nothing-trained-nan-is-no-data"),
    ],
)
def test_a_nan_loss_diverges_only_when_the_learner_trained(trained, expected):
    out = drop_no_data(iteration(2, ret=10.0, length=10.0, loss=NAN, trained=trained))
    found = diverged(_flat(out), None)
    assert (found[0] if found else None) == expected


def test_an_infinite_metric_is_a_divergence():
    assert diverged({"score": float("inf")}, "score") == ("score", float("inf"))
    assert diverged({"score": 1.0}, "score") is None


@pytest.mark.parametrize("value", [True, False, None, "nan"])
def test_a_metric_that_is_no_number_is_no_divergence(value):
    """A trial reporting its metric as a bool (or text) is scored as if it had not reported it;
    it is not stopped at its first result as a NaN would be."""
    from tune_app.tuner import SpecStopper

    assert diverged({"score": value}, "score") is None
    assert not SpecStopper({}, metric="score")("t", {"score": value, "training_iteration": 1})


def test_smoothed_return_is_the_mean_of_the_last_window_episodes():
    rng = random.Random(0)
    smoother = Smoother(window=10)
    episodes: list[float] = []
    for _ in range(30):
        # Iterations of 0 or 2 episodes: the window of 10 holds whole iterations, so the mean
        # of per-iteration means weighted by counts is exactly the mean of the last 10.
        n = rng.choice([0, 0, 2])
        returns = [rng.uniform(0, 100) for _ in range(n)]
        episodes += returns
        mean = sum(returns) / n if n else NAN
        out = smoother.update(drop_no_data(iteration(n, ret=mean, length=mean / 2)))
        if not episodes:
            assert SMOOTHED_RETURN.split("/")[1] not in out["env_runners"]  # missing, never NaN
            continue
        last = episodes[-10:]
        assert out["env_runners"]["episode_return_mean_smoothed"] == pytest.approx(
            sum(last) / len(last)
        )
        assert out["env_runners"][SMOOTHED_LEN.split("/")[1]] == pytest.approx(
            sum(last) / len(last) / 2
        )


def test_numpy_counts_and_means_are_numbers():
    import numpy as np

    result = iteration(np.int64(2), ret=np.float64(5.0), length=np.float64(4.0))
    out = Smoother(10).update(drop_no_data(result))
    assert out["env_runners"]["episode_return_mean_smoothed"] == 5.0
    empty = drop_no_data(iteration(np.int64(0), ret=np.float64("nan")))
    assert "episode_return_mean" not in empty["env_runners"]


def test_smoothing_carries_over_iterations_without_episodes():
    smoother = Smoother(window=100)
    smoother.update(iteration(3, ret=20.0, length=20.0))
    out = smoother.update(drop_no_data(iteration(0)))
    assert out["env_runners"]["episode_return_mean_smoothed"] == 20.0
    assert "episode_return_mean" not in out["env_runners"]


def _flat(result, prefix=""):
    out = {}
    for key, value in result.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out
