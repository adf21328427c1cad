import json
import os
import tempfile
import time

from ray import tune


def train(config):
    """Counts to config["steps"], sleeping each step, with a checkpoint at every step."""
    step = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "state.json")) as f:
                step = json.load(f)["step"]
    while step < config["steps"]:
        step += 1
        time.sleep(config["sleep"])
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "state.json"), "w") as f:
                json.dump({"step": step}, f)
            tune.report(
                {"score": config["x"] * step, "step": step},
                checkpoint=tune.Checkpoint.from_directory(folder),
            )
