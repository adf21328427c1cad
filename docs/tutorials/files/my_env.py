"""A gymnasium env of one's own: walk right to the end of a corridor, reward 1 at the end."""

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    def __init__(self, config=None):
        self.length = 5
        self.observation_space = gym.spaces.Box(0.0, 5.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return np.array([self.position], np.float32), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= self.length
        truncated = False
        return np.array([self.position], np.float32), float(done), done, truncated, {}
