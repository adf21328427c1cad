"""Writing a run folder's own files: the run manifest (`run.json`) with the spec as run and the
versions, and the journal of ended trials folded into Tune's saved state. Ray-free."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from tune_app.rundir.layout import (
    FINISHED_FILE,
    RUN_FILE,
    SPEC_FILE,
    newest_state,
    read_rows,
    write_json,
    write_text,
)

if TYPE_CHECKING:
    from tune_app.plan import ExperimentPlan, Plan

PACKAGES = ("tune_app", "ray", "torch", "gymnasium", "hyperopt", "tensorboard", "numpy", "pydantic")


def mark_finished_trials(folder: Path) -> list[str]:
    """Trials our journal saw end are marked so (terminated or errored) in Tune's newest saved
    state, with their last result: after a run, so the state on disk is final; before a resume,
    so Tune does not run them again. Returns their ids."""
    journal = Path(folder) / FINISHED_FILE
    state = newest_state(folder)
    if not journal.exists() or state is None:
        return []
    finished = {
        row["trial_id"]: row for row in read_rows(journal.read_bytes()) if "trial_id" in row
    }
    data = json.loads(state.read_text(encoding="utf-8"))
    marked = []
    for entry in data.get("trial_data", []):
        trial = json.loads(entry[0])
        done = finished.get(trial.get("trial_id"))
        if done is None or trial.get("status") in ("TERMINATED", "ERROR"):
            continue
        trial["status"] = done.get("status", "TERMINATED")
        metadata = json.loads(entry[1])
        metadata["last_result"] = done.get("last_result") or metadata.get("last_result")
        entry[0], entry[1] = json.dumps(trial, indent=2), json.dumps(metadata, indent=2)
        marked.append(trial["trial_id"])
    if marked:
        write_text(state, json.dumps(data, indent=2))
    return marked


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def write_run_files(ep: ExperimentPlan, plan: Plan, command: list[str]) -> None:
    """Leave the spec as run, how it was run (command, versions) and what `analyze` needs to read
    the results without the spec (metric, mode, searched keys, scheduler, stop) beside them."""
    exp = ep.experiment
    (ep.storage_dir / SPEC_FILE).write_text(plan.spec.text, encoding="utf-8")
    info = {
        "experiment": ep.name,
        "spec_file": str(plan.spec.file.resolve()),
        "smoke": plan.smoke,
        "trainable": exp.run,
        "metric": ep.metric,
        "mode": ep.mode,
        "scope": exp.scope,
        "seeds": list(exp.seeds),
        "aggregate": exp.aggregate,
        "searched": list(ep.searched),
        "scheduler": exp.scheduler.type,
        "stop": dict(exp.stop),
        "trials": ep.trials,
        "command": [_program(), *command],
        "cwd": os.getcwd(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": package_versions(),
    }
    write_json(ep.storage_dir / RUN_FILE, info)


def _program() -> str:
    name = Path(sys.argv[0]).name
    return "python -m tune_app" if name == "__main__.py" else name
