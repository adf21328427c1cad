"""A function trainable that fails at x = 2 after one result (tests one line per failure)."""

from ray import tune


def train(config):
    tune.report({"score": 1.0})
    if config["x"] == 2:
        raise ValueError("boom at x=2")
    tune.report({"score": 2.0})
