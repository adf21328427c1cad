"""A trainable for population-based training: `value` climbs by `lr` each step from where its
checkpoint left it, and each result reports the `lr` the trial read from its config, so a test
can see a mutated value reach the code that uses it. `sleep` (seconds, default 0) slows each
step, for a test that kills the run at a given moment."""

import json
import os
import tempfile
import time

from ray import tune


def train(config):
    step, value = 0, 0.0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "state.json")) as f:
                step, value = json.load(f)
    while True:
        time.sleep(config.get("sleep", 0))
        step += 1
        value += config["lr"]
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "state.json"), "w") as f:
                json.dump([step, value], f)
            tune.report(
                {"value": value, "lr_seen": config["lr"], "step": step},
                checkpoint=tune.Checkpoint.from_directory(folder),
            )
