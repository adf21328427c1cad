"""What RLlib's results mean: "no data yet" told apart from divergence, returns smoothed as the
old stack did.

RLlib 2.60 reduces its episode statistics every iteration: an iteration in which no episode
finished reports `env_runners/episode_return_mean` as NaN, and a learner that did not train
reports NaN losses. Those NaNs mean "no data", so they are dropped here before any stopper,
scheduler, searcher or log sees them; a NaN that remains (a NaN return over finished episodes, a
NaN loss of a learner that trained) is a real divergence (`tune_app.divergence`). The old
stack's `episode_reward_mean` was a moving average over the last 100 episodes; the new stack's
is over one iteration's episodes only, so the smoothed keys below restore the old meaning.
Ray-free, so it is tested without Ray.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from collections.abc import Mapping
from typing import Any

from tune_app.scoring import finite

RETURN_MEAN = "env_runners/episode_return_mean"
# The mean return and length of the last `metrics_num_episodes_for_smoothing` episodes (RLlib's
# old `episode_reward_mean` / `episode_len_mean`), computed by the app across iterations.
SMOOTHED_RETURN = "env_runners/episode_return_mean_smoothed"
SMOOTHED_LEN = "env_runners/episode_len_mean_smoothed"

# Result groups whose statistics are per finished episode, and the count that says whether
# any episode finished this iteration.
_EPISODE_GROUPS = (("env_runners",), ("evaluation", "env_runners"))
_TRAINED_COUNTS = ("num_module_steps_trained", "num_env_steps_trained")


def is_nan(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(value)


def drop_no_data(result: dict[str, Any]) -> dict[str, Any]:
    """`result` (RLlib's nested dict) without the NaNs that mean "nothing happened yet".

    An episode group's NaNs go when no episode finished in it this iteration; a learner module's
    NaNs go when it trained on nothing this iteration; parameter counts that RLlib logs once and
    then reports as NaN always go.
    """
    out = dict(result)
    for path in _EPISODE_GROUPS:
        group = _get(out, path)
        if isinstance(group, dict) and not finite(group.get("num_episodes")):
            _set(out, path, _without_nan(group))
    learners = out.get("learners")
    if isinstance(learners, dict):
        cleaned = {}
        for module, stats in learners.items():
            if isinstance(stats, dict):
                trained = any(finite(stats.get(k)) for k in _TRAINED_COUNTS)
                stats = {
                    k: v
                    for k, v in stats.items()
                    if not (is_nan(v) and (not trained or k.endswith("parameters")))
                }
            cleaned[module] = stats
        out["learners"] = cleaned
    return out


def _without_nan(group: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in group.items():
        if isinstance(value, dict):
            value = _without_nan(value)
            if not value:
                continue
        elif is_nan(value):
            continue
        out[key] = value
    return out


def _get(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _set(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        node[part] = dict(node[part])
        node = node[part]
    node[path[-1]] = value


class Smoother:
    """Mean return and length over the last `window` finished episodes, across iterations.

    Each iteration adds its episodes' mean, weighted by how many finished; the oldest iteration
    counts (with its mean) only for as many episodes as are still inside the window, so the
    value is exact when the window holds whole iterations. With several env runners RLlib's
    per-iteration mean is a mean of runners' means, so this is that close to the exact mean.
    """

    def __init__(self, window: int = 100) -> None:
        self.window = max(1, int(window))
        self.rows: deque[tuple[float, float | None, float]] = deque()

    def update(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` with the smoothed keys added to its env_runners group (once any episode has
        finished; before that they are missing, never NaN)."""
        group = result.get("env_runners")
        if not isinstance(group, dict):
            return result
        count, mean = finite(group.get("num_episodes")), finite(group.get("episode_return_mean"))
        if count and mean is not None:
            self.rows.append((mean, finite(group.get("episode_len_mean")), count))
            while sum(n for *_, n in self.rows) - self.rows[0][2] >= self.window:
                self.rows.popleft()
        if not self.rows:
            return result
        excess = max(0.0, sum(n for *_, n in self.rows) - self.window)
        weights = [n - (excess if i == 0 else 0.0) for i, (*_, n) in enumerate(self.rows)]
        total = sum(weights)
        added = {
            SMOOTHED_RETURN: sum(w * r[0] for w, r in zip(weights, self.rows, strict=True)) / total
        }
        lengths = [(w, r[1]) for w, r in zip(weights, self.rows, strict=True) if r[1] is not None]
        if lengths:
            added[SMOOTHED_LEN] = sum(w * v for w, v in lengths) / sum(w for w, _ in lengths)
        group = dict(group)
        for key, value in added.items():
            group[key.split("/", 1)[1]] = value
        return {**result, "env_runners": group}
