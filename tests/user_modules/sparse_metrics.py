"""Trainables whose metric is not in every result, or not a number: `acc` = x * step where it
is reported, `loss` on every step."""

from ray import tune


def every_second(config):
    """Validates every second step (`acc` on even steps), and ends on a step without it."""
    for step in range(1, 6):
        metrics = {"loss": 1.0 / step}
        if step % 2 == 0:
            metrics["acc"] = config["x"] * step
        tune.report(metrics)


def warm_up(config):
    """A first step without `acc` (a warm-up), then `acc` on every step."""
    tune.report({"loss": 1.0})
    for step in range(2, 5):
        tune.report({"loss": 1.0 / step, "acc": config["x"] * step})


def as_text(config):
    """`acc` as text, as a value formatted for a log line would be."""
    for step in range(1, 4):
        tune.report({"loss": 1.0 / step, "acc": f"{config['x'] * step:.2f}"})
