"""Recorded learning curves replayed as a Tune trainable, so a search can be repeated cheaply.

The table (search_table.json, written by `python -m benchmarks.search_rl --record`) holds one real
curve of `reinforce` per configuration of a grid, the mean of its runs on a few seeds. `replay`
reports the curve of the recorded configuration nearest to its config, one iteration per result
and no sleep, so compute is counted in trial-iterations, not seconds. It checkpoints its place
in the curve, so HyperBand can pause and resume it and PBT can copy it; a trial that PBT moves
to other hyperparameters goes on along the new configuration's curve from where that curve had
reached the same return (`Position.moved_to`): an approximation, since no recorded run changed
hyperparameters midway.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from functools import cache
from itertools import product
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("search_table.json")
STATE = "position.json"  # in a replay checkpoint
SMOOTH = 3  # results averaged when matching a return level (a result may be noisy)


@dataclass(frozen=True)
class Table:
    """Curves of the metric, one per configuration of the grid `axes` (row-major, the axes in
    their order), each `iterations` long."""

    metric: str
    mode: str
    axes: dict[str, list[float]]
    curves: list[list[float]]
    about: str = ""

    def __post_init__(self) -> None:
        size = math.prod(len(v) for v in self.axes.values())
        if len(self.curves) != size:
            raise ValueError(f"{size} configurations on the axes, but {len(self.curves)} curves")
        if any(v <= 0 for values in self.axes.values() for v in values):
            raise ValueError("axis values are compared on a log scale: all must be positive")

    @property
    def iterations(self) -> int:
        return min(len(c) for c in self.curves)

    @property
    def best(self) -> float:
        """The best value in the table: the best result any search of this space can see."""
        pick = max if self.mode == "max" else min
        return pick(v for c in self.curves for v in c)

    def configs(self) -> list[dict[str, float]]:
        """The recorded configurations, in the curves' order."""
        return [
            dict(zip(self.axes, values, strict=True)) for values in product(*self.axes.values())
        ]

    def nearest(self, config: dict[str, Any]) -> int:
        """The index of the recorded configuration nearest to `config`, axis by axis on a log
        scale (the searches sample these axes log-uniformly); a missing key takes the middle."""
        index = 0
        for key, values in self.axes.items():
            wanted = config.get(key)
            if wanted is None:
                i = len(values) // 2
            else:
                i = min(range(len(values)), key=lambda j: abs(math.log(values[j] / float(wanted))))
            index = index * len(values) + i
        return index

    def to_json(self) -> dict[str, Any]:
        return {
            "about": self.about,
            "metric": self.metric,
            "mode": self.mode,
            "axes": self.axes,
            "curves": self.curves,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Table:
        return cls(
            metric=data["metric"],
            mode=data["mode"],
            axes=data["axes"],
            curves=data["curves"],
            about=data.get("about", ""),
        )


@cache
def load_table(path: str = str(TABLE)) -> Table:
    return Table.from_json(json.loads(Path(path).read_text()))


def smoothed(curve: list[float], t: int) -> float:
    """The mean of the curve's last `SMOOTH` values up to and including index `t`."""
    window = curve[max(0, t - SMOOTH + 1) : t + 1]
    return sum(window) / len(window)


@dataclass(frozen=True)
class Position:
    """Where a replay is: the curve it follows and how many of its values it has reported."""

    curve: int
    done: int  # the next value to report is curves[curve][done]

    def moved_to(self, curve: int, table: Table) -> Position:
        """The position on `curve` of a policy trained so far along this one: unchanged on the
        same curve; else just past the first point where `curve` (smoothed) reached this one's
        level, or past its own best if it never did (hyperparameters that never got this far
        are taken not to hold it)."""
        if curve == self.curve or self.done == 0:
            return Position(curve, self.done)
        old, new = table.curves[self.curve], table.curves[curve]
        level = smoothed(old, self.done - 1)
        sign = 1 if table.mode == "max" else -1
        levels = [sign * smoothed(new, t) for t in range(len(new))]
        reached = next((t for t, v in enumerate(levels) if v >= sign * level), None)
        t = reached if reached is not None else max(range(len(new)), key=levels.__getitem__)
        return Position(curve, t + 1)


def replay(config: dict[str, Any]) -> None:
    """The Tune function trainable: the nearest recorded curve, one value per iteration.

    `checkpoint: true` reports a checkpoint with every result (for HyperBand and PBT). With
    `goal` and `goal_file`, the first result reaching the goal creates that file, and from then
    on every trial stops at its next result: the benchmark measures only the compute until the
    goal, and what the search would do after it is not worth replaying.
    """
    from ray import tune

    table = load_table(config.get("table", str(TABLE)))
    curve = table.nearest(config)
    position = Position(curve, 0)
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            saved = json.loads((Path(folder) / STATE).read_text())
        position = Position(saved["curve"], saved["done"]).moved_to(curve, table)
    goal, goal_file = config.get("goal"), config.get("goal_file")
    sign = 1 if table.mode == "max" else -1
    values = table.curves[position.curve]
    for done in range(position.done, len(values)):
        value = values[done]
        over = goal_file is not None and Path(goal_file).exists()
        metrics = {table.metric: value, "replayed_curve": position.curve, "curve_position": done}
        if config.get("checkpoint"):
            with tempfile.TemporaryDirectory() as folder:
                state = {"curve": position.curve, "done": done + 1}
                (Path(folder) / STATE).write_text(json.dumps(state))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
        else:
            tune.report(metrics)
        # Only once report returns: Tune asked for the next result, so it logged this one (a
        # trial stopped at its previous result never gets here).
        if goal is not None and goal_file is not None and sign * value >= sign * goal:
            Path(goal_file).touch()
        if over:
            return
