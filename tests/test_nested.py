"""Nested parallel work: simulations inside trials, trials side by side, experiments at once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainables.es_cartpole import centered_ranks, es_update, rollout
from tune_app.nested import max_overlap

from .conftest import results_of


def rows_by_trial(folder: Path) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for row in results_of(folder):
        rows.setdefault(row["trial_id"], []).append(row)
    return rows


def span(rows: list[dict]) -> tuple[float, float]:
    """A trial's wall-clock interval, from its first iteration's start to its last report."""
    return rows[0]["logged_at"] - rows[0]["time_this_iter_s"], rows[-1]["logged_at"]


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


@pytest.mark.parametrize(
    "spans, expected",
    [
        pytest.param([(0, 1), (1, 2)], 1, id="touching"),
        pytest.param([(0, 2), (1, 3), (1.5, 1.7)], 3, id="three"),
        pytest.param([], 0, id="none"),
    ],
)
def test_max_overlap(spans, expected):
    assert max_overlap(spans) == expected


def test_es_update_moves_towards_better_returns():
    params = np.zeros(2)
    noise = np.array([[1.0, 0.0], [-1.0, 0.0]])
    moved = es_update(params, noise, np.array([10.0, 0.0]), lr=0.1, sigma=0.1)
    assert moved[0] > 0 and moved[1] == 0
    assert centered_ranks(np.array([3.0, 1.0, 2.0])).tolist() == [0.5, -0.5, 0.0]


def test_rollout_is_deterministic_for_a_seed():
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    params = np.random.default_rng(0).standard_normal(10)
    assert rollout(env, params, 2, seed=5) == rollout(env, params, 2, seed=5)


def test_simulations_of_a_trial_run_concurrently_while_other_trials_hold_the_cpus(
    ray_session, cli, write_spec, tmp_path
):
    # 2 trials x (empty head + 2 simulations of 0.5 CPU) = every CPU of the 2-CPU session.
    spec_file = write_spec("""
metric: episode_return_mean
mode: max
experiments:
  es:
    run: es_cartpole
    simulations: 2
    cpu_per_simulation: 0.5
    stop: {training_iteration: 8}  # one iteration of 8 with both at once is enough
    config:
      lr: {grid_search: [0.05, 0.2]}
      episodes: 12
      population: 32
""")
    # Tasks long enough (~0.2 s) that scheduling jitter on a busy machine cannot hide the overlap.
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    trials = rows_by_trial(tmp_path / "o" / "es")
    assert len(trials) == 2
    for rows in trials.values():
        assert len(rows) == 8
        assert all(r["simulations"] == 2 for r in rows)
        assert max(r["simulation_overlap"] for r in rows) == 2
        assert all(r["env_steps"] > 0 for r in rows)
    first, second = (span(rows) for rows in trials.values())
    assert overlaps(first, second)


@pytest.mark.slow  # the first tier runs two experiments at once in test_runner
def test_two_experiments_run_at_the_same_time(ray_session, cli, write_spec, tmp_path):
    # One trial at a time per experiment: on 2 CPUs, overlap can only come from the other one.
    spec_file = write_spec("""
max_concurrent_trials: 1
experiments:
 slow_a:  # 6 s, longer than slow_b's two trials: overlap despite starts seconds apart
  run: my_func
  stop: {training_iteration: 60}
  config: {alpha: 0.5, beta: 1, sleep: 0.1}
 slow_b:
  run: my_func
  stop: {training_iteration: 15}
  config: {alpha: 0.5, beta: {grid_search: [1, 2]}, sleep: 0.1}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o")
    assert result.code == 0
    a = [span(r) for r in rows_by_trial(tmp_path / "o" / "slow_a").values()]
    b = [span(r) for r in rows_by_trial(tmp_path / "o" / "slow_b").values()]
    assert len(a) == 1 and len(b) == 2
    assert any(overlaps(x, y) for x in a for y in b)
    assert not overlaps(*b)  # max_concurrent_trials: 1 held inside each experiment
    summaries = [
        json.loads((tmp_path / "o" / name / "summary.json").read_text())
        for name in ("slow_a", "slow_b")
    ]
    assert [s["counts"] for s in summaries] == [{"TERMINATED": 1}, {"TERMINATED": 2}]
    assert "slow_a" in result.out and "slow_b" in result.out
