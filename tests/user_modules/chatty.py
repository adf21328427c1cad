"""Prints a line, then reports; the trial of x = 2 fails after two results, the others take
longer (tests fail_fast and log_to_file)."""

import time

from ray import tune


def train(config):
    print(f"chatty x={config['x']}")
    for step in range(10):
        if config["x"] == 2 and step == 2:
            raise ValueError("x must not be 2")
        time.sleep(0.1)
        tune.report({"score": float(step)})
