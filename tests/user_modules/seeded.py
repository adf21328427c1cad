"""A trainable whose score depends on its seed: configuration x=1 is a lottery (10, 0, 0 for
seeds 0, 1, 2 and so on), x=2 is steady (5 on every seed). The best single trial is x=1's
seed 0; the best configuration by the mean over seeds is x=2."""

from ray import tune

SCORES = {1: [10.0, 0.0, 0.0], 2: [5.0, 5.0, 5.0]}


def train(config):
    table = SCORES.get(config["x"])
    value = table[config["seed"] % 3] if table else float(config["x"])
    for _ in range(2):
        tune.report({"score": value})
