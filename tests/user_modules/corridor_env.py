import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Walk right to the end of a corridor; reward 1 at the end."""

    def __init__(self, config=None):
        self.length = 5
        self.observation_space = gym.spaces.Box(0.0, 5.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.pos = 0
        return np.array([self.pos], np.float32), {}

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        done = self.pos >= self.length
        return np.array([self.pos], np.float32), float(done), done, False, {}
