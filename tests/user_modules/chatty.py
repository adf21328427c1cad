"""Prints a line, then reports; the trial of x = 2 fails after ten results (about 1 s), the
others report at once and run 5 s, so with two trials at a time the other one has results when
x = 2 fails however their starts differ, and has not ended (tests fail_fast and log_to_file)."""

import time

from ray import tune


def train(config):
    print(f"chatty x={config['x']}")
    for step in range(50):
        if config["x"] == 2 and step == 10:
            raise ValueError("x must not be 2")
        tune.report({"score": float(step)})
        time.sleep(0.1)
