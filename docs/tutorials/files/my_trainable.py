"""A tune.Trainable class: set up once, one `step` per iteration, checkpoints to pause and
resume it (HyperBand and PBT need them)."""

import json
import os

from ray import tune


class Walker(tune.Trainable):
    """A walk that gains `speed` per step, less a penalty for straying from speed 2."""

    def setup(self, config):
        self.position = 0.0
        self.speed = config["speed"]

    def step(self):
        self.position += self.speed - 0.1 * (self.speed - 2) ** 2
        return {"distance": self.position}

    def save_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "state.json"), "w") as f:
            json.dump({"position": self.position}, f)

    def load_checkpoint(self, checkpoint_dir):
        with open(os.path.join(checkpoint_dir, "state.json")) as f:
            self.position = json.load(f)["position"]
