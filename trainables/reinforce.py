"""REINFORCE with a linear softmax policy on a discrete-action gymnasium env, in numpy.

Each iteration plays `batch` episodes with the current policy, weights each step's log-policy
gradient by its discounted return-to-go (standardized over the batch, a baseline), adds an
entropy bonus and takes one Adam step (Williams, 1992). It reports `episode_return_mean` over
the last 100 episodes, as RLlib and Stable-Baselines3 smooth it, so a trial reaching a return
has held it. State goes through Tune checkpoints (HyperBand pauses, PBT copies).
"""

import tempfile
from collections import deque
from pathlib import Path

import numpy as np

from trainables.es_cartpole import make_env
from tune_app.contract import Knob, TrainableInfo

WINDOW = 100  # episodes in episode_return_mean, RLlib's metrics_num_episodes_for_smoothing


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, shifted for stability."""
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def play(env, weights: np.ndarray, rng: np.random.Generator):
    """One episode with actions sampled from the policy: features (obs plus a bias), actions and
    rewards per step."""
    features, actions, rewards = [], [], []
    obs, _ = env.reset(seed=int(rng.integers(2**31)))
    done = False
    while not done:
        x = np.append(obs, 1.0)
        probs = softmax(weights @ x)
        action = min(int(np.searchsorted(np.cumsum(probs), rng.random())), len(probs) - 1)
        obs, reward, terminated, truncated, _ = env.step(action)
        features.append(x)
        actions.append(action)
        rewards.append(float(reward))
        done = terminated or truncated
    return np.array(features), np.array(actions), np.array(rewards)


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """The discounted return from each step to the episode's end."""
    out, g = np.empty(len(rewards)), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def policy_gradient(weights, features, actions, advantages, entropy_coeff) -> np.ndarray:
    """The gradient of mean(advantage * log pi(a|s)) + entropy_coeff * mean(entropy) in the
    weights: for a linear softmax policy, (onehot - pi) outer x per step."""
    probs = softmax(features @ weights.T)
    onehot = np.eye(weights.shape[0])[actions]
    grad = ((onehot - probs) * advantages[:, None]).T @ features
    log_probs = np.log(probs + 1e-12)
    entropy = -(probs * log_probs).sum(axis=1, keepdims=True)
    grad += entropy_coeff * (-probs * (log_probs + entropy)).T @ features
    return grad / len(actions)


def adam_step(weights, grad, state, lr, step, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam ascent step on `weights` (in place); `state` holds the two moment arrays."""
    m, v = state
    m[:] = beta1 * m + (1 - beta1) * grad
    v[:] = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**step), v / (1 - beta2**step)
    weights += lr * m_hat / (np.sqrt(v_hat) + eps)


def reinforce(config):
    """The Tune function trainable: one batch of episodes and one update per reported iteration."""
    from ray import tune

    env = make_env(config.get("env", "CartPole-v1"))
    lr, gamma = config.get("lr", 0.1), config.get("gamma", 0.99)
    batch, entropy_coeff = config.get("batch", 8), config.get("entropy_coeff", 0.0)
    seed = config.get("seed", 0)
    n_actions, dim = env.action_space.n, env.observation_space.shape[0] + 1
    weights = np.zeros((n_actions, dim))
    adam = (np.zeros_like(weights), np.zeros_like(weights))
    recent: deque[float] = deque(maxlen=WINDOW)
    iteration, steps = 0, 0

    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = np.load(Path(folder) / "state.npz", allow_pickle=False)
            weights, adam = state["weights"], (state["m"], state["v"])
            iteration, steps = int(state["iteration"]), int(state["steps"])
            recent.extend(state["recent"].tolist())

    while True:
        iteration += 1
        # Episodes and actions depend on (seed, iteration) only: a resumed trial draws the same.
        rng = np.random.default_rng([seed, iteration])
        episodes = [play(env, weights, rng) for _ in range(batch)]
        advantages = np.concatenate([returns_to_go(r, gamma) for _, _, r in episodes])
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        features = np.concatenate([f for f, _, _ in episodes])
        actions = np.concatenate([a for _, a, _ in episodes])
        grad = policy_gradient(weights, features, actions, advantages, entropy_coeff)
        adam_step(weights, grad, adam, lr, iteration)

        returns = [float(r.sum()) for _, _, r in episodes]
        recent.extend(returns)
        steps += len(actions)
        with tempfile.TemporaryDirectory() as folder:
            np.savez(
                Path(folder) / "state.npz",
                weights=weights,
                m=adam[0],
                v=adam[1],
                iteration=iteration,
                steps=steps,
                recent=np.array(recent),
            )
            tune.report(
                {
                    "episode_return_mean": float(np.mean(recent)),
                    "iteration_return_mean": float(np.mean(returns)),
                    "env_steps": steps,
                },
                checkpoint=tune.Checkpoint.from_directory(folder),
            )


INFO = TrainableInfo(
    name="reinforce",
    fn=reinforce,
    doc="REINFORCE, linear softmax policy with Adam and an entropy bonus, on a gymnasium env",
    metric="episode_return_mean",
    mode="max",
    metrics=("episode_return_mean", "iteration_return_mean", "env_steps"),
    knobs=(
        Knob("lr", float, 0.1, "Adam step size"),
        Knob("gamma", float, 0.99, "discount of the returns-to-go"),
        Knob("batch", int, 8, "episodes per iteration (one update)"),
        Knob("entropy_coeff", float, 0.0, "weight of the policy's entropy in the objective"),
        Knob("seed", int, 0, "seed of the env resets and the sampled actions"),
        Knob("env", str, "CartPole-v1", "gymnasium id or module:Class, discrete actions"),
    ),
    smoke={"batch": 2},
    checkpoints=True,
)
