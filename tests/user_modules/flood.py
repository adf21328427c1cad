from ray import tune


def train(config):
    """`results` results as fast as the trial can report them, each with its index."""
    for i in range(config["results"]):
        tune.report({"score": config["x"] + i * 1e-6, "index": i})
