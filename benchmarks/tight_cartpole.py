"""CartPole-v1 whose pole counts as fallen at 4 degrees instead of 12: the environment of the
search benchmark's recorded curves (`env: benchmarks.tight_cartpole:TightCartPole`).

On the standard CartPole a third of the REINFORCE configurations of the benchmark's space hold
the pole for 500 steps within 81 iterations, so every search finds one at once; with a third of
the angle a linear policy must be more precise, and few configurations get there.
"""

from __future__ import annotations

import math
from typing import Any

from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ANGLE_DEGREES = 4.0
MAX_STEPS = 500  # CartPole-v1's limit; an env class gets no TimeLimit wrapper from gym.make


class TightCartPole(CartPoleEnv):
    """CartPole-v1 with a 4 degree failure angle, truncated at 500 steps as v1 is."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.theta_threshold_radians = ANGLE_DEGREES * math.pi / 180
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self._steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        self._steps += 1
        return obs, reward, terminated, truncated or self._steps >= MAX_STEPS, info
