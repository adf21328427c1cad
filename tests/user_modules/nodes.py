import importlib.util
import json
import os
import tempfile
import time

import helper  # a module beside this one: must reach the workers too
import ray
from ray import tune


def train(config):
    """Reports which node ran it and where its module was imported from on that node."""
    step = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "step.json")) as f:
                step = json.load(f)["step"]
    node = ray.get_runtime_context().get_node_id()
    origin = importlib.util.find_spec("helper").origin
    meet = config.get("meet")  # a folder where `meet_count` trials meet before their first step
    if meet and step == 0:
        os.makedirs(meet, exist_ok=True)
        open(os.path.join(meet, str(config["x"])), "w").close()
        deadline = time.monotonic() + 120
        while len(os.listdir(meet)) < config.get("meet_count", 2) and time.monotonic() < deadline:
            time.sleep(0.2)
    while step < config["steps"]:
        step += 1
        time.sleep(config["sleep"])
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "step.json"), "w") as f:
                json.dump({"step": step}, f)
            tune.report(
                {"score": helper.scale(config["x"], step), "node": node, "helper": origin},
                checkpoint=tune.Checkpoint.from_directory(folder),
            )
