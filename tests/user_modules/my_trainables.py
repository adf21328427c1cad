from ray import tune


def train(config):
    """Reports score = x * step for a few steps."""
    for step in range(1, config.get("steps", 3) + 1):
        tune.report({"score": config["x"] * step, "step": step})


def legacy(config, reporter):
    """The original function API: loops until the spec's stop criteria end it."""
    step = 0
    while True:
        step += 1
        reporter(score=config["x"] * step)


def keywords(config):
    """As Ray 1.x to 2.6 documented it: metrics as keyword arguments of tune.report."""
    for step in range(1, 4):
        tune.report(score=config["x"] * step, step=step)


def generator(config):
    """Tune's generator API: each yield a result."""
    for step in range(1, 4):
        yield {"score": config["x"] * step, "step": step}


def train_api(config):
    """As Ray 2.7 to 2.40 documented it: ray.train's report, Checkpoint and get_checkpoint.
    Fails once after its second step; the retry goes on from that step's checkpoint."""
    import json
    import os
    import tempfile

    from ray import train
    from ray.train import Checkpoint

    start, restored = 1, False
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "step.json")) as f:
                start, restored = json.load(f)["step"] + 1, True
    for step in range(start, 5):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "step.json"), "w") as f:
                json.dump({"step": step}, f)
            metrics = {"score": config["x"] * step, "restored": restored}
            train.report(metrics, checkpoint=Checkpoint.from_directory(folder))
        if step == 2 and not restored:
            raise RuntimeError("fails once, after step 2")
