"""Finding runs to resume, and the plan that continues them, from the files a run left.

A run folder holds `run.json` (which spec file, smoke or not), `spec.yaml` (the spec as run) and
Tune's saved state. A spec file changed since the run is refused with a diff unless forced; the
search then continues as it was run, since Tune's saved state fixes it.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from tune_app.api import DICT_SPEC
from tune_app.errors import SpecError
from tune_app.plan import Plan, make_plan
from tune_app.rundir.layout import RUN_FILE, SPEC_FILE
from tune_app.rundir.storage import is_uri, open_runs
from tune_app.spec.resolve import loads


def resume_plan(folder: str | Path, *, force: bool = False, cpus: float | None = None) -> Plan:
    """The plan continuing the runs in `folder` (a path or a cloud URI); a forced spec change is
    among its warnings."""
    found = open_runs(folder)
    runs = [r.local for r in found]
    infos = [_run_info(r) for r in runs]
    spec_files = {info["spec_file"] for info in infos}
    if len(spec_files) != 1:
        raise SpecError(
            f"{folder} holds runs of {len(spec_files)} spec files: {', '.join(sorted(spec_files))}",
            suggestion="resume one experiment folder at a time",
        )
    spec_file = Path(spec_files.pop())
    as_run = (runs[0] / SPEC_FILE).read_text(encoding="utf-8")
    warnings = []
    now = spec_file.read_text(encoding="utf-8") if spec_file.exists() else ""
    # A spec given to tune_app.run as a mapping has no file to compare: it runs as it was run.
    if now != as_run and spec_file.name != DICT_SPEC:
        diff = "".join(
            difflib.unified_diff(
                as_run.splitlines(keepends=True),
                now.splitlines(keepends=True),
                fromfile=f"{runs[0] / SPEC_FILE} (as run)",
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
    smoke = bool(infos[0].get("smoke"))
    root = found[0].parent
    if smoke:
        root = root.rsplit("/", 1)[0] if found[0].uri else str(Path(root).parent)
    plan = make_plan(loaded, cpus=cpus, storage_path=root, smoke=smoke, rllib_checks=True)
    wanted = {_same(r.location) for r in found}
    kept = tuple(ep for ep in plan.experiments if _same(ep.location) in wanted)
    if len(kept) != len(runs):
        names = sorted({r.location.rsplit("/", 1)[-1] for r in found} - {ep.name for ep in kept})
        raise SpecError(f"the spec as run has no experiment {', '.join(names)}")
    plan = Plan(
        spec=plan.spec,
        experiments=kept,
        cpus=plan.cpus,
        warnings=(*plan.warnings, *warnings),
        smoke=smoke,
    )
    return plan


def _same(location: str) -> str:
    """A location in one spelling, so a folder and its resolved path compare equal."""
    return location.rstrip("/") if is_uri(location) else str(Path(location).resolve())


def _run_info(folder: Path) -> dict:
    try:
        info = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SpecError(f"{folder / RUN_FILE} cannot be read: {err}") from None
    if not (folder / "tuner.pkl").exists():
        raise SpecError(
            f"{folder} has no saved Tune state (tuner.pkl): the run ended before Tune started"
        )
    return info
