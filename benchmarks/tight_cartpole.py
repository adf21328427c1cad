"""CartPole-v1 whose pole counts as fallen at 6 degrees instead of 12: the environment of the
search benchmark's recorded curves (`env: benchmarks.tight_cartpole:TightCartPole`).

On the standard CartPole the es_cartpole configurations that learn to hold the pole for 500
steps get there in 15 to 25 generations, so every search finds one at once; with half the angle
a linear policy must be more precise: fewer configurations get there, in 26 to 81 generations.
"""

from __future__ import annotations

import math
from typing import Any

from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ANGLE_DEGREES = 6.0
MAX_STEPS = 500  # CartPole-v1's limit; an env class gets no TimeLimit wrapper from gym.make


class TightCartPole(CartPoleEnv):
    """CartPole-v1 with a 6 degree failure angle, truncated at 500 steps as v1 is."""

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
