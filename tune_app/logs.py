"""What a run leaves beside Tune's own files: results.jsonl, summary.json, run.json, spec.yaml.

`results.jsonl` is written by a Tune callback on the driver, one JSON object per result, flushed
per line, so a killed run leaves only whole lines behind.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from ray.tune import Callback

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"
SPEC_FILE = "spec.yaml"
PACKAGES = ("tune_app", "ray", "torch", "gymnasium", "hyperopt", "tensorboard", "numpy", "pydantic")

# Result keys that repeat on every row without saying anything about the trial's progress.
_DROPPED = ("config", "hostname", "node_ip", "date", "done", "should_checkpoint")


def jsonable(value: Any) -> Any:
    """`value` as strict JSON: numpy scalars unwrapped, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    return str(value)


class JsonlResults(Callback):
    """Appends every trial result to `results.jsonl`; a trial's config rides on its first line."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._seen: set[str] = set()
        self._file: Any = None

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        row = {"trial_id": trial.trial_id, "logged_at": time.time()}
        row.update((k, v) for k, v in result.items() if k not in _DROPPED)
        if trial.trial_id not in self._seen:
            self._seen.add(trial.trial_id)
            row["config"] = trial.config
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(jsonable(row), allow_nan=False) + "\n")
        self._file.flush()

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its run config for resume; an open file cannot travel.
        return {**self.__dict__, "_file": None}


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def write_run_files(
    folder: Path, spec_text: str, spec_file: Path, experiment: str, command: list[str]
) -> None:
    """Leave the spec as run, the command line and package versions beside the results."""
    (folder / SPEC_FILE).write_text(spec_text, encoding="utf-8")
    info = {
        "experiment": experiment,
        "spec_file": str(spec_file.resolve()),
        "command": [_program(), *command],
        "cwd": os.getcwd(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": package_versions(),
    }
    write_json(folder / RUN_FILE, info)


def _program() -> str:
    name = Path(sys.argv[0]).name
    return "python -m tune_app" if name == "__main__.py" else name


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically: a reader never sees half a file, even if the run dies mid-write."""
    write_text(path, json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a file atomically, through a temporary file beside it and a rename."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
