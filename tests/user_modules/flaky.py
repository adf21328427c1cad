import json
import math
import os
import signal
import tempfile

from ray import tune


def train(config):
    """Three checkpointed steps; at step 2 fails the way config["mode"] says."""
    step = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "state.json")) as f:
                step = json.load(f)["step"]
    while step < 3:
        step += 1
        mode = config["mode"]
        marker = os.path.join(config["markers"], mode)
        if step == 2 and (mode.endswith("always") or not os.path.exists(marker)):
            open(marker, "a").close()
            if mode.startswith("kill"):
                os.kill(os.getpid(), signal.SIGKILL)
            if mode.startswith("raise"):
                raise ValueError(f"{mode} at step {step}")
        score = math.nan if mode == "nan" and step == 2 else float(step)
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "state.json"), "w") as f:
                json.dump({"step": step}, f)
            tune.report({"score": score}, checkpoint=tune.Checkpoint.from_directory(folder))
