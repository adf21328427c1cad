"""RLlib's Algorithm classes by name, imported only when asked, and the subclass trials run
(its results cleaned by `metrics`).
"""

from __future__ import annotations

import importlib
import logging
from functools import cache
from typing import Any

from tune_app.rllib.metrics import Smoother, drop_no_data
from tune_app.rllib.tables import ALGORITHMS


def algorithm_class(name: str) -> Any:
    """The Algorithm class named `name` (imports RLlib)."""
    cls = getattr(importlib.import_module(ALGORITHMS[name]), name)
    # RLlib logs a notice about its new API stack for every config it builds; the plan says it.
    # Set after the import: importing RLlib sets its logger's level.
    logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    return cls


@cache
def app_algorithm(name: str) -> Any:
    """The algorithm as trials run it: RLlib's class whose results have their no-data NaNs
    dropped and the smoothed episode returns added (see `metrics`). One class per name and
    process, found as `tune_app.rllib.algorithm.<name>` (`__getattr__`): pickles of it (Tune's
    saved state, RLlib's checkpoints) name it, where a class made anew each time was pickled
    with its code, tying a checkpoint to the release that wrote it."""
    base = algorithm_class(name)

    def step(self: Any) -> dict[str, Any]:
        result = super(cls, self).step()  # type: ignore[arg-type]
        smoother = self.__dict__.get("_app_smoother")
        if smoother is None:
            window = self.config.metrics_num_episodes_for_smoothing
            smoother = self.__dict__["_app_smoother"] = Smoother(window)
        return smoother.update(drop_no_data(result))

    # Same name as RLlib's class: Tune names trials and folders after it.
    cls = type(name, (base,), {"step": step, "__module__": __name__, "__qualname__": name})
    return cls


def __getattr__(name: str) -> Any:
    """`tune_app.rllib.algorithm.PPO` and the like: the class trials run (`app_algorithm`), as
    pickle looks it up by its module and name."""
    if name not in ALGORITHMS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return app_algorithm(name)
