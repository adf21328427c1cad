"""tune_app: hyperparameter searches on Ray Tune and RLlib from one YAML spec file.

`tune_app.run(spec)` runs a spec, `tune_app.resume(folder)` continues an interrupted run,
`tune_app.load(folder)` reads a run back as a DataFrame, `tune_app.compare(run, run)` compares
runs (see `tune_app.api`); bad input raises `SpecError`, and every error the app reports is a
`TuneAppError` (see `tune_app.errors`). Importing the package imports neither Ray nor pandas. A
Ray outside the releases the app is checked on gets one `UncheckedRayWarning` when a run starts.
"""

from __future__ import annotations

from typing import Any

from tune_app.ray_internals.versions import UncheckedRayWarning

__version__ = "0.1.0"
__all__ = [
    "BestCheckpoint",
    "Interrupted",
    "NeverReported",
    "RunResult",
    "SpecError",
    "StorageError",
    "TuneAppError",
    "TuneFailure",
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
    if name in __all__:  # imported on first use: api's names, and the errors it raises
        from tune_app import api, errors

        return getattr(api if hasattr(api, name) else errors, name)
    raise AttributeError(f"module 'tune_app' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The documented API, though imported on first use, and the module's own dunders
    (`dir(tune_app)`, completion): not the names its code imports (`Any`) nor its submodules."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
