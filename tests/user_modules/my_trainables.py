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
