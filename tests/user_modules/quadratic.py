"""A smooth search problem: score = -(x - 0.3)^2 - (y - 0.5)^2, plus a little per step, for
`steps` steps; the best configuration is x = 0.3, y = 0.5."""

from ray import tune


def train(config):
    base = -((config["x"] - 0.3) ** 2) - (config["y"] - 0.5) ** 2
    for step in range(1, config.get("steps", 1) + 1):
        tune.report({"score": base + 0.01 * step})
