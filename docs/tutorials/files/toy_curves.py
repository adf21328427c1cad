"""A toy learning curve for the tutorial on judging a search: `lr` sets how fast accuracy rises
and how high it ends (a high lr rises fast and plateaus low), and the seed adds noise that is
skewed (now and then a lucky seed) and grows with lr."""

import math
import random

from ray import tune


def train(config):
    lr, seed = config["lr"], config.get("seed", 0)
    ceiling = 0.95 - 3 * lr
    for epoch in range(1, 9):
        luck = random.Random(seed * 1000 + epoch).expovariate(1.0) - 1
        accuracy = ceiling * (1 - math.exp(-8 * lr * epoch)) + 20 * lr * lr * luck
        tune.report({"accuracy": accuracy})
