"""The REINFORCE trainable: its gradient against finite differences, its returns-to-go, and a
short run through the app that learns with a good step size and not with a tiny one."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from trainables.reinforce import WINDOW, policy_gradient, returns_to_go, softmax

from .conftest import results_of


def objective(weights, features, actions, advantages, entropy_coeff) -> float:
    """mean(advantage * log pi(a|s)) + entropy_coeff * mean(entropy): what the gradient climbs."""
    probs = softmax(features @ weights.T)
    log_pi = np.log(probs[np.arange(len(actions)), actions])
    entropy = -(probs * np.log(probs)).sum(axis=1)
    return float((advantages * log_pi).mean() + entropy_coeff * entropy.mean())


@pytest.mark.parametrize("entropy_coeff", [0.0, 0.5])
def test_policy_gradient_matches_finite_differences(entropy_coeff):
    rng = np.random.default_rng(3)
    weights = rng.normal(size=(3, 5))
    features = rng.normal(size=(40, 5))
    actions = rng.integers(3, size=40)
    advantages = rng.normal(size=40)
    grad = policy_gradient(weights, features, actions, advantages, entropy_coeff)
    numeric = np.zeros_like(weights)
    h = 1e-6
    for i in np.ndindex(weights.shape):
        up, down = weights.copy(), weights.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = (
            objective(up, features, actions, advantages, entropy_coeff)
            - objective(down, features, actions, advantages, entropy_coeff)
        ) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_returns_to_go_discount_each_step_to_the_episode_end():
    np.testing.assert_allclose(returns_to_go(np.array([1.0, 1.0, 1.0]), 0.5), [1.75, 1.5, 1.0])
    np.testing.assert_allclose(returns_to_go(np.array([0.0, 2.0]), 1.0), [2.0, 2.0])


SPEC = """
metric: episode_return_mean
mode: max
experiments:
  pg:
    run: reinforce
    env: CartPole-v1
    stop: {training_iteration: 40}
    config:
      lr: {grid_search: [0.3, 0.0001]}
      batch: 5
"""


def test_reinforce_learns_cartpole_with_a_good_step_size(ray_session, cli, write_spec, tmp_path):
    assert cli("run", write_spec(SPEC), "--storage-path", tmp_path / "o", "-q").code == 0
    rows: dict[float, list[dict]] = {}
    lr_of: dict[str, float] = {}  # trial id -> lr (the config comes on a trial's first row)
    for row in results_of(tmp_path / "o" / "pg"):
        lr = lr_of.setdefault(row["trial_id"], row.get("config", {}).get("lr"))
        rows.setdefault(lr, []).append(row)
    good, tiny = rows[0.3], rows[0.0001]
    assert [r["training_iteration"] for r in good] == list(range(1, 41))

    def late(trial: list[dict]) -> float:
        return float(np.mean([r["iteration_return_mean"] for r in trial[-10:]]))

    # A random policy holds CartPole's pole about 22 steps: lr 0.3 holds it over twice as
    # long by iterations 31-40, lr 0.0001 has hardly moved. (Seeded: the same every run.)
    assert late(good) > 2.5 * late(tiny) and late(tiny) < 40
    # episode_return_mean averages the last WINDOW episodes: the last 20 iterations of 5.
    last = good[-(WINDOW // 5) :]
    assert good[-1]["episode_return_mean"] == pytest.approx(
        np.mean([r["iteration_return_mean"] for r in last])
    )
    assert good[0]["episode_return_mean"] == good[0]["iteration_return_mean"]


class Stop(Exception):
    """Raised by the fake `tune.report` to end the trainable's loop."""


def run_until(iterations: int, monkeypatch, folder, start=None) -> list[dict]:
    """Results of `reinforce` on CartPole until `iterations`, with Tune's report and
    get_checkpoint faked; each iteration's checkpoint kept in `folder`/N; `start`: one to resume."""
    from ray import tune

    from trainables.reinforce import reinforce

    results: list[dict] = []

    def report(metrics, checkpoint=None):
        results.append(dict(metrics))
        shutil.copytree(checkpoint.path, folder / str(metrics["env_steps"]))
        (folder / "last").write_text(str(metrics["env_steps"]))
        if len(results) == iterations:
            raise Stop

    monkeypatch.setattr(tune, "report", report)
    monkeypatch.setattr(tune, "get_checkpoint", lambda: start)
    with pytest.raises(Stop):
        reinforce({"lr": 0.3, "batch": 3, "entropy_coeff": 0.01, "seed": 5})
    return results


def test_a_resumed_run_goes_on_exactly_as_an_uninterrupted_one(monkeypatch, tmp_path):
    from ray import tune

    whole = run_until(12, monkeypatch, tmp_path / "whole")
    first = run_until(5, monkeypatch, tmp_path / "first")
    saved = tmp_path / "first" / (tmp_path / "first" / "last").read_text()
    rest = run_until(7, monkeypatch, tmp_path / "rest", tune.Checkpoint.from_directory(saved))
    assert first + rest == whole  # weights, Adam's moments, the return window and the counts
