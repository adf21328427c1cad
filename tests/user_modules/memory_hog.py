"""A class trainable that takes `gb` GB of memory in the trial with x == 2 (numpy, touched, so
resident) and little in the others. A class without reset_config: every trial gets a process of
its own, started when the trial starts."""

import time

import numpy as np
from ray import tune


class Hog(tune.Trainable):
    def setup(self, config):
        self.x = config["x"]
        self.sleep = config["sleep"]
        self.gb = config.get("gb", 0)
        self.held = None

    def step(self):
        if self.x == 2 and self.held is None:
            self.held = np.ones(int(self.gb * 2**30) // 8)
        time.sleep(self.sleep)
        return {"score": self.x * self.iteration}
