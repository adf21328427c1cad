"""A gymnasium env whose observations are text: RLlib has no default encoder for them, so an
algorithm built on it fails during set-up (tests that the real error is shown)."""

import gymnasium as gym


class TextObservationEnv(gym.Env):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Text(max_length=8)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return "start", {}

    def step(self, action):
        return "step", 0.0, True, False, {}
