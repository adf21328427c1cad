"""Finding runs to resume, and the plan that continues them, from the files a run left.

A run folder holds `run.json` (which spec file, smoke or not, which release), `spec.yaml` (the
spec as run) and Tune's saved state. A spec file changed since the run is refused with a diff
unless forced; the search then continues as it was run, since Tune's saved state fixes it. A
saved state this release cannot read is refused in one line naming the release that wrote it.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.plan.types import Plan
from tune_app.resources import Machine
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import RunRecord
from tune_app.rundir.write import read_run_record
from tune_app.saved_state import check_readable
from tune_app.sources import changed_modules
from tune_app.spec.loading import DICT_SPEC, spec_text
from tune_app.spec.resolve import loads


def resume_plan(
    folder: str | Path,
    *,
    force: bool = False,
    machine: Machine | None = None,
) -> Plan:
    """The plan continuing the runs in `folder` (a path or a cloud URI), for `machine` (a
    cluster's nodes) or this one; a forced spec change is among its warnings."""
    found = RunLocation.open(folder, resuming=True)
    records = [_resumable_record(r) for r in found]
    spec_files = {record.spec_file for record in records}
    if len(spec_files) != 1:
        raise SpecError(
            f"{folder} holds runs of {len(spec_files)} spec files: {', '.join(sorted(spec_files))}",
            suggestion="resume one experiment folder at a time",
        )
    spec_file = Path(spec_files.pop())
    as_run = spec_text(found[0].spec)
    if as_run is None:
        raise SpecError(
            f"{found[0].where}: the spec as run ({found[0].spec.name}) cannot be read as a spec "
            "file (missing, not a regular file, too large or not UTF-8)",
            suggestion="resume continues the spec a run kept; start a new run instead",
        )
    warnings = []
    now = spec_text(spec_file) or ""  # run.json names it: anything else there reads as missing
    # A spec given to tune_app.run as a mapping has no file to compare: it runs as it was run.
    if now != as_run and spec_file.name != DICT_SPEC:
        diff = "".join(
            difflib.unified_diff(
                as_run.splitlines(keepends=True),
                now.splitlines(keepends=True),
                fromfile=f"{found[0].spec} (as run)",
                tofile=str(spec_file) if now else f"{spec_file} (missing)",
            )
        )
        if not force:
            raise SpecError(
                f"{spec_file} changed since the run:\n{diff}",
                suggestion="pass --force to resume the search as it was run (the changes are "
                "ignored), or start a new run",
                multiline=True,
            )
        warnings.append(f"{spec_file} changed since the run; resuming the spec as it was run")
    loaded = loads(as_run, spec_file)
    smoke = records[0].smoke
    root = found[0].storage_path(smoke)
    plan = make_plan(loaded, machine=machine, storage_path=root, smoke=smoke, rllib_checks=True)
    # A re-run wrote `<name>_<n>` beside the first run: each found run continues the plan's
    # experiment its run.json names, in the folder it was run in.
    by_name = {ep.name: ep for ep in plan.experiments}
    names = [record.experiment or run.name for record, run in zip(records, found, strict=True)]
    missing = sorted(set(names) - set(by_name))
    if missing:
        raise SpecError(f"the spec as run has no experiment {', '.join(missing)}")
    kept = tuple(replace(by_name[name], folder=run) for name, run in zip(names, found, strict=True))
    warnings += _code_changes(records)
    return replace(plan, experiments=kept, warnings=(*plan.warnings, *warnings))


def _code_changes(records: list[RunRecord]) -> list[str]:
    """One warning per experiment whose user code changed since its run began: its finished
    trials keep the old code's scores, and what runs now runs the new code."""
    found = []
    for record in records:
        changed = changed_modules(record.sources)
        if changed:
            found.append(
                f"{record.experiment}: {', '.join(changed)} changed since the run began; trials "
                "resumed now run the changed code, beside results of the code as it was"
            )
    return found


def _resumable_record(folder: RunLocation) -> RunRecord:
    record = read_run_record(folder)
    if not folder.has_tune_state():
        raise SpecError(
            f"{folder.local} has no saved Tune state (tuner.pkl): the run ended before Tune started"
        )
    # Before Ray starts: a state naming what this release lacks fails in Tune with a traceback.
    check_readable(folder, record)
    return record
