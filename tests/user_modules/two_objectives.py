"""Two objectives at odds: `accuracy` grows with `width` and `mem_mb` with it too, so the front
runs from small and poor to large and good; `width` above 0.8 also gets slower (`time_s`)."""

from ray import tune


def train(config):
    width = config["width"]
    for step in range(1, config.get("steps", 1) + 1):
        tune.report(
            {
                "accuracy": width - 0.1 * (width - 0.5) ** 2 + 0.001 * step,
                "mem_mb": 1000 + 2000 * width,
                "time_s": 1 + max(0.0, width - 0.8) * 10 + 0.1 * config.get("noise", 0),
            }
        )
