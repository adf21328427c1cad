"""Two objectives at odds: `accuracy` grows with `width` and `mem_mb` with it too, so the front
runs from small and poor to large and good; `width` above 0.8 also gets slower (`time_s`).
`broken: mem_mb` (or `accuracy`) reports that objective -inf (NaN) at the last step."""

from ray import tune


def train(config):
    width, steps = config["width"], config.get("steps", 1)
    for step in range(1, steps + 1):
        result = {
            "accuracy": width - 0.1 * (width - 0.5) ** 2 + 0.001 * step,
            "mem_mb": 1000 + 2000 * width,
            "time_s": 1 + max(0.0, width - 0.8) * 10 + 0.1 * config.get("noise", 0),
        }
        if step == steps and config.get("broken") in result:
            result[config["broken"]] = float("-inf" if config["broken"] == "mem_mb" else "nan")
        tune.report(result)
