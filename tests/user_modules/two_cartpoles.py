"""Two CartPoles side by side, one agent each."""

import gymnasium as gym
from ray.rllib.env.multi_agent_env import MultiAgentEnv


class TwoCartPoles(MultiAgentEnv):
    def __init__(self, config=None):
        super().__init__()
        self.envs = {a: gym.make("CartPole-v1") for a in ("a0", "a1")}
        self.agents = self.possible_agents = list(self.envs)
        self.observation_spaces = {a: e.observation_space for a, e in self.envs.items()}
        self.action_spaces = {a: e.action_space for a, e in self.envs.items()}
        self.done = set()

    def reset(self, *, seed=None, options=None):
        self.done = set()
        return {a: e.reset(seed=seed)[0] for a, e in self.envs.items()}, {}

    def step(self, actions):
        obs, rew, term, trunc = {}, {}, {}, {}
        for a, act in actions.items():
            o, r, te, tr, _ = self.envs[a].step(act)
            obs[a], rew[a], term[a], trunc[a] = o, r, te, tr
            if te or tr:
                self.done.add(a)
        term["__all__"] = len(self.done) == len(self.envs)
        trunc["__all__"] = False
        return obs, rew, term, trunc, {}


def mapping(agent_id, episode, **kwargs):
    return "p0" if agent_id == "a0" else "p1"
