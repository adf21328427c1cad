from ray import tune


def train(config):
    """Reports x, and fails for x == 2."""
    if config["x"] == 2:
        raise ValueError("x must not be 2")
    tune.report({"score": float(config["x"])})
