"""A function trainable: it reads its config, reports a metric each step, and Tune stops it."""

from ray import tune


def train(config):
    """Climb towards x = 3: the score rises with each step and is highest near x = 3."""
    x, rate = config["x"], config["rate"]
    for step in range(1, 101):
        tune.report({"score": -((x - 3) ** 2) + rate * step})
