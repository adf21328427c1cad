"""Trainables that run far longer than any test waits."""

import time

from ray import tune


def forever(config):
    """Reports every 0.2 s for an hour: only a time limit ends it."""
    for step in range(18_000):
        tune.report({"score": float(step)})
        time.sleep(0.2)
