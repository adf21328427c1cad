"""tune_app: hyperparameter searches on Ray Tune and RLlib from one YAML spec file.

`tune_app.run(spec)` runs a spec, `tune_app.resume(folder)` continues an interrupted run,
`tune_app.load(folder)` reads a run back as a DataFrame, `tune_app.compare(run, run)` compares
runs (see `tune_app.api`); importing the package imports neither Ray nor pandas. A Ray outside
the releases the app is checked on gets one `UncheckedRayWarning` when a run starts.
"""

from __future__ import annotations

from typing import Any

from tune_app.ray_internals.versions import UncheckedRayWarning

__version__ = "0.1.0"
__all__ = [
    "BestCheckpoint",
    "RunResult",
    "UncheckedRayWarning",
    "best_checkpoint",
    "compare",
    "load",
    "read",
    "resume",
    "run",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name in __all__:  # api's names, imported on first use
        from tune_app import api

        return getattr(api, name)
    raise AttributeError(f"module 'tune_app' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The documented API too, though imported on first use (`dir(tune_app)`, completion)."""
    return sorted({*globals(), *__all__})
