"""RLlib's Algorithm classes by name, imported only when asked, and the subclass trials run
(its results cleaned by `metrics`).
"""

from __future__ import annotations

import importlib
import logging
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


def app_algorithm(name: str) -> Any:
    """The algorithm as trials run it: RLlib's class whose results have their no-data NaNs
    dropped and the smoothed episode returns added (see `metrics`)."""
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
