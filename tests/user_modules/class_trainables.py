"""Trainables written against Tune's class API, as its docs show them: one that saves no
checkpoints, one that does but cannot reset to a new config, and one that can (so its process
may serve the next trial)."""

import json
import os

from ray import tune


class Plain(tune.Trainable):
    """The shortest class Tune's docs allow: setup and step, no checkpoints."""

    def setup(self, config):
        self.x = 0
        self.a = config["a"]

    def step(self):
        self.x += 1
        return {"score": self.a * self.x}


class Counter(Plain):
    def save_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "state.json"), "w") as f:
            json.dump({"x": self.x}, f)

    def load_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "state.json")) as f:
            self.x = json.load(f)["x"]


class ResettingCounter(Counter):
    def reset_config(self, new_config):
        self.setup(new_config)
        return True
