from ray import tune


def train(config):
    """mean_accuracy = i ** alpha for three steps; alpha 0.6 fails before its first report."""
    if config["alpha"] == 0.6:
        raise ValueError("alpha 0.6 is refused")
    for i in range(1, 4):
        tune.report({"mean_accuracy": i ** config["alpha"], "loss": config["beta"] / i})
