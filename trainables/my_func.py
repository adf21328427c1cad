"""The classic Tune example: `mean_accuracy = i ** alpha` while `i` grows by `beta` each step.

Written against the original Tune function API, `my_func(config, reporter)`, looping until the
spec's `stop` criteria end it, as the first Tune examples did.
"""

import time

from tune_app.contract import Knob, TrainableInfo


def accuracy(i: float, alpha: float) -> float:
    """The reported metric at step `i`."""
    return i**alpha


def my_func(config, reporter):
    """Report `mean_accuracy` forever; Tune stops the trial."""
    i = 0
    while True:
        reporter(timesteps_total=i, mean_accuracy=accuracy(i, config["alpha"]))
        i += config["beta"]
        time.sleep(config.get("sleep", 0.0))


INFO = TrainableInfo(
    name="my_func",
    fn=my_func,
    doc="classic Tune example: mean_accuracy = i ** alpha, i grows by beta per step",
    metric="mean_accuracy",
    mode="max",
    metrics=("mean_accuracy", "timesteps_total"),
    knobs=(
        Knob("alpha", float, None, "exponent of the accuracy curve"),
        Knob("beta", float, None, "growth of i per step"),
        Knob("sleep", float, 0.0, "seconds to sleep per step, to mimic work"),
    ),
    smoke={"alpha": 0.5, "beta": 1.0},
)
