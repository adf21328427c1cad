"""Trainables that run far longer than any test waits: silent after their first result (a
deadlock, a simulator that never returns), or reporting for an hour."""

import time

from ray import tune


def train(config):
    """Reports once, then hangs; appends the time of its report to config["log"], if given, one
    line per attempt."""
    if config.get("log"):
        with open(config["log"], "a") as f:
            f.write(f"{time.time()}\n")
    tune.report({"score": 1.0})
    time.sleep(600)
    tune.report({"score": 2.0})


class Hangs(tune.Trainable):
    """The same as a class: its second step never returns."""

    def step(self):
        if self.iteration >= 1:
            time.sleep(600)
        return {"score": 1.0}


def forever(config):
    """Reports every 0.2 s for an hour: only a time limit ends it."""
    for step in range(18_000):
        tune.report({"score": float(step)})
        time.sleep(0.2)
