"""Writing a run folder's own files: the run manifest (`run.json`) with the spec as run and the
versions, and the journal of ended trials folded into Tune's saved state. Ray-free."""

from __future__ import annotations

import itertools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tune_app
from tune_app.errors import SpecError
from tune_app.rundir.files import read_json, write_json, write_text
from tune_app.rundir.layout import journal, newest_trial_entries, read_newest_state
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import ENDED, RunRecord, TrialEnd
from tune_app.scoring import finite
from tune_app.sources import app_fingerprint, module_fingerprints
from tune_app.space import outer_domains

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan, Plan

# Samplers that draw uniformly in log space: `report` draws their axes on a log scale.
LOG_KINDS = ("loguniform", "qloguniform", "lograndint", "qlograndint")
PACKAGES = ("tune_app", "ray", "torch", "gymnasium", "hyperopt", "tensorboard", "numpy", "pydantic")


def mark_finished_trials(folder: Path) -> list[str]:
    """Trials our journal saw end are marked so (terminated or errored) in Tune's newest saved
    state, with their last result: after a run, so the state on disk is final; before a resume,
    so Tune does not run them again. Returns their ids."""
    finished = {e.trial_id: e for e in journal(folder)}
    try:  # Tune's own final save is most often right: read whole only a state to correct
        stale = any(_stale(entry, finished) for entry in newest_trial_entries(folder))
    except (OSError, ValueError, TypeError, IndexError):
        return []  # nothing Tune can resume
    found = read_newest_state(folder) if stale else None
    if found is None:
        return []
    state, data = found
    marked = []
    for entry in data.get("trial_data", []):
        trial = json.loads(entry[0])
        done = finished.get(trial.get("trial_id"))
        if done is None or trial.get("status") in ENDED:
            continue
        trial["status"] = done.status
        metadata = json.loads(entry[1])
        metadata["last_result"] = done.last_result or metadata.get("last_result")
        entry[0], entry[1] = json.dumps(trial, indent=2), json.dumps(metadata, indent=2)
        marked.append(trial["trial_id"])
    if marked:
        write_text(state, json.dumps(data, indent=2))
    return marked


def _stale(entry: Any, finished: dict[str, TrialEnd]) -> bool:
    """Whether a saved trial (its JSON text first) ended in the journal but not in the state."""
    trial = json.loads(entry[0])
    return trial.get("trial_id") in finished and trial.get("status") not in ENDED


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    # The app's own: the code running, also from a source checkout that was never installed.
    found["tune_app"] = tune_app.__version__
    return found


@dataclass(frozen=True)
class Invocation:
    """How a run was started, as run.json keeps it: the command, its working folder and the spec
    file, taken in the process that was given the command (`here`). An experiment of several is
    run in a Ray actor of its own, whose working folder and argv are Ray's worker's: taken
    there, `resume` looked for the spec where the worker ran and refused the run."""

    command: tuple[str, ...]
    cwd: str
    spec_file: str

    @classmethod
    def here(cls, args: Sequence[str], spec_file: Path) -> Invocation:
        return cls((_program(), *args), os.getcwd(), str(spec_file.resolve()))


def write_run_files(ep: ExperimentPlan, plan: Plan, started: Invocation) -> None:
    """Leave the spec as run, how it was run (`started`, versions) and what `analyze` needs to
    read the results without the spec (metric, mode, searched keys, scheduler, stop) beside
    them."""
    exp = ep.experiment
    write_text(ep.folder.spec, plan.spec.text)
    record = RunRecord(
        experiment=ep.name,
        spec_file=started.spec_file,
        smoke=plan.smoke,
        trainable=exp.run,
        metric=ep.metric,
        mode=ep.mode,
        objectives=exp.objectives,
        constraints=exp.constraints,
        scope=exp.scope,
        seeds=tuple(exp.seeds),
        aggregate=exp.aggregate,
        select=exp.select,
        searched=tuple(ep.searched),
        written_at={p: exp.written_path(p) for p in ep.searched if exp.written_path(p) != p},
        log_scaled=tuple(log_scaled(exp.config)),
        scheduler=exp.scheduler.type,
        reduction_factor=getattr(exp.scheduler, "reduction_factor", None),
        stop=dict(exp.stop),
        time_budget_s=exp.time_budget_s,
        result_timeout_s=exp.result_timeout_s,
        trials=ep.trials,
        trial_ends=ep.trial_ends.lengths if ep.trial_ends is not None else None,
        layout=dict(ep.layout.chosen) if ep.layout is not None else {},
        layout_line=ep.layout.line if ep.layout is not None else "",
        command=started.command,
        cwd=started.cwd,
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        versions=package_versions(),
        sources=module_fingerprints(code_modules(ep), ep.search_path),
        app_code=app_fingerprint(),
        warm_start=ep.warm.runs if ep.warm is not None else (),
    )
    write_json(ep.folder.record, record.to_json())


def code_modules(ep: ExperimentPlan) -> tuple[str, ...]:
    """The modules of user code the experiment's trials import: its kind's and its env's."""
    kind_modules = ep.trainable.kind.code_modules(ep.experiment)
    return tuple(dict.fromkeys([*kind_modules, *ep.env_modules]))


def read_run_record(location: RunLocation) -> RunRecord:
    """The run.json of a run folder; SpecError naming the file if it cannot be read."""
    try:
        data = read_json(location.record)
    except (OSError, ValueError) as err:
        raise SpecError(f"{location.record} cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{location.record} cannot be read: not a JSON object")
    return RunRecord.from_json(data)


def log_scaled(space: Any) -> list[str]:
    """The searched paths of a parsed space that are searched on a log scale: the log samplers,
    and grids and choices of positive numbers spaced evenly in log space rather than linearly
    (`[1e-4, 1e-3, 1e-2]`, `[16, 32, 64, 128]`)."""
    found = []
    for path, domain in outer_domains(space):
        if domain.kind in LOG_KINDS:
            found.append(path)
        elif domain.kind in ("grid_search", "choice") and _log_spaced(domain.args):
            found.append(path)
    return found


def _log_spaced(values: tuple[Any, ...]) -> bool:
    """Positive numbers whose gaps are more even in log space than in linear space; two values
    are when they are 100x or more apart."""
    numbers = [finite(v) for v in values]
    xs = sorted({x for x in numbers if x is not None})
    if len(xs) != len(numbers) or len(xs) < 2 or xs[0] <= 0:
        return False
    if len(xs) == 2:
        return xs[1] >= 100 * xs[0]
    logs = [math.log(x) for x in xs]
    return _unevenness(logs) < _unevenness(xs)


def _unevenness(xs: list[float]) -> float:
    """The spread of the gaps between sorted `xs`, relative to their mean (0: evenly spaced)."""
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    mean = sum(gaps) / len(gaps)
    return math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps)) / mean


def _program() -> str:
    name = Path(sys.argv[0]).name
    return "python -m tune_app" if name == "__main__.py" else name
