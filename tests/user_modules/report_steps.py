from ray import tune


def train(config):
    width = sum(config["layers"])
    for step in range(1, 7):
        if width == 64 and step == 3:
            raise ValueError("loss diverged at step 3")
        tune.report({"score": width / 16 * step + config["x"]})
