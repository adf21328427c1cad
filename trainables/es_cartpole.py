"""Evolution strategies on CartPole with a linear numpy policy, rollouts as parallel simulations.

Each iteration perturbs the policy parameters with antithetic Gaussian noise, evaluates the
population by rollouts split across the trial's simulation bundles (Ray tasks in its placement
group), and steps along the rank-weighted noise (Salimans et al., 2017). State goes through Tune
checkpoints, so HyperBand can pause and resume a trial and a failed trial restarts where it was.
"""

import tempfile
import time
from collections.abc import Callable
from operator import mul
from pathlib import Path

import numpy as np

from tune_app.contract import Knob, TrainableInfo


def linear_policy(params: np.ndarray, n_actions: int) -> Callable[[np.ndarray], int]:
    """The greedy action of a linear policy (one row of weights plus a bias per action).

    Plain Python on the rows: for CartPole's four numbers a numpy call per step costs more than
    the arithmetic, and the policy runs once per env step.
    """
    rows = params.reshape(n_actions, -1).tolist()

    def act(obs: np.ndarray) -> int:
        values = obs.tolist()
        scores = [sum(map(mul, row, values)) + row[-1] for row in rows]  # map stops at the bias
        return scores.index(max(scores))

    return act


def rollout(env, params: np.ndarray, episodes: int, seed: int) -> tuple[float, int]:
    """Mean return of `params` over `episodes` episodes, and the env steps taken."""
    act = linear_policy(params, env.action_space.n)
    total, steps = 0.0, 0
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += reward
            steps += 1
            done = terminated or truncated
    return total / episodes, steps


def make_env(env):
    """A gymnasium env from an id, or from an env class (`env: module:Class` in a spec)."""
    import gymnasium as gym

    return env() if isinstance(env, type) else gym.make(env)


def evaluate(env_id, population: np.ndarray, episodes: int, seed: int):
    """One simulation: returns of a slice of the population; `(result, start, end)` for timing."""
    start = time.time()
    env = make_env(env_id)
    results = [rollout(env, params, episodes, seed) for params in population]
    env.close()
    returns = np.array([r for r, _ in results])
    return (returns, sum(s for _, s in results)), start, time.time()


def centered_ranks(returns: np.ndarray) -> np.ndarray:
    """Returns mapped to ranks in [-0.5, 0.5]: robust to the scale of the rewards."""
    ranks = np.empty(len(returns))
    ranks[np.argsort(returns)] = np.arange(len(returns))
    return ranks / max(len(returns) - 1, 1) - 0.5


def es_update(params: np.ndarray, noise: np.ndarray, returns: np.ndarray, lr: float, sigma: float):
    """One ES step: move along the noise, weighted by the centred ranks of its returns."""
    weights = centered_ranks(returns)
    return params + lr / (len(returns) * sigma) * weights @ noise


def es_cartpole(config):
    """The Tune function trainable: one ES generation per reported iteration."""
    import ray
    from ray import tune

    from tune_app.nested import run_simulations, simulation_bundles

    env_id = config.get("env", "CartPole-v1")
    lr, sigma = config.get("lr", 0.1), config.get("sigma", 0.1)
    half = max(1, config.get("population", 32) // 2)
    episodes = config.get("episodes", 1)
    probe = make_env(env_id)
    dim = probe.action_space.n * (probe.observation_space.shape[0] + 1)
    probe.close()

    seed = config.get("seed", 0)
    params, iteration = np.zeros(dim), 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = np.load(Path(folder) / "state.npz", allow_pickle=False)
            params, iteration = state["params"], int(state["iteration"])

    bundles = simulation_bundles()
    remote_evaluate = ray.remote(evaluate)
    while True:
        iteration += 1
        # Noise and env seeds depend on (seed, iteration) only: a resumed trial draws the same.
        rng = np.random.default_rng([seed, iteration])
        eps = rng.standard_normal((half, dim))
        noise = np.concatenate([eps, -eps])
        population = params + sigma * noise
        env_seed = int(rng.integers(2**31))
        chunks = np.array_split(population, len(bundles))
        jobs = [(env_id, chunk, episodes, env_seed) for chunk in chunks]
        batch = run_simulations(remote_evaluate, jobs, bundles)
        returns = np.concatenate([r for r, _ in batch.results])
        steps = sum(s for _, s in batch.results)
        params = es_update(params, noise, returns, lr, sigma)

        with tempfile.TemporaryDirectory() as folder:
            np.savez(Path(folder) / "state.npz", params=params, iteration=iteration)
            tune.report(
                {
                    "episode_return_mean": float(returns.mean()),
                    "episode_return_max": float(returns.max()),
                    "env_steps": steps,
                    "env_steps_per_s": steps / batch.wall_s,
                    "simulations": len(bundles),
                    "simulation_overlap": batch.overlap,
                    "simulation_parallelism": batch.parallelism,
                },
                checkpoint=tune.Checkpoint.from_directory(folder),
            )


INFO = TrainableInfo(
    name="es_cartpole",
    fn=es_cartpole,
    doc="evolution strategies, linear policy, CartPole rollouts as parallel simulations",
    metric="episode_return_mean",
    mode="max",
    metrics=(
        "episode_return_mean",
        "episode_return_max",
        "env_steps",
        "env_steps_per_s",
        "simulations",
        "simulation_overlap",
        "simulation_parallelism",
    ),
    knobs=(
        Knob("lr", float, 0.1, "step size of the ES update"),
        Knob("sigma", float, 0.1, "standard deviation of the parameter noise"),
        Knob("population", int, 32, "perturbed policies per generation (antithetic pairs)"),
        Knob("episodes", int, 1, "episodes per policy evaluation"),
        Knob("seed", int, 0, "seed of the noise and the environments"),
        Knob("env", str, "CartPole-v1", "gymnasium id or module:Class, discrete actions"),
    ),
    simulations=2,
    head_cpu=0.0,
    smoke={"population": 8},
    checkpoints=True,
)
