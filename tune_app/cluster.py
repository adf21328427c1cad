"""Where Ray runs, and the runtime environment that brings the trials' code to every node.

Without an address the app starts a local Ray sized to the machine; with `--address` or
`RAY_ADDRESS` it joins that cluster. On a cluster nothing is installed by hand on the workers:
this package, `trainables/` and the user's modules beside the spec travel as Ray `py_modules`.
On this machine they are put on the workers' PYTHONPATH.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trainables
import tune_app
from tune_app.plan import Plan

# A spec folder's own .py files travel with it (a trainable's helpers live beside it), up to this.
MAX_SIBLING_BYTES = 1_000_000


def cluster_address(given: str | None) -> str | None:
    """The cluster to join: `--address`, else RAY_ADDRESS, else None (start a local Ray)."""
    return given or os.environ.get("RAY_ADDRESS") or None


def local_pythonpath(plan: Plan) -> str | None:
    """PYTHONPATH for a local Ray this process starts: the user modules' folders first. Workers
    inherit it, so Ray's pre-started workers serve the first trials (a runtime env would make
    every worker start afresh: about 2 s before the first result)."""
    folders = sorted({f for ep in plan.experiments for f in _search_path(ep)})
    if not folders:
        return None
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys([*folders, *filter(None, existing.split(os.pathsep))]))


def runtime_env(plan: Plan) -> dict[str, Any]:
    """The runtime env of the driver's job on a cluster: the code itself, as py_modules."""
    modules = [_package_dir(tune_app), _package_dir(trainables)]
    for ep in plan.experiments:
        for name in _user_modules(ep):
            modules += _module_files(name.split(".")[0], _search_path(ep))
    return {"py_modules": list(dict.fromkeys(modules))}


def _search_path(ep: Any) -> tuple[str, ...]:
    env_path = ep.env.search_path if ep.env is not None else ()
    return (*ep.trainable.search_path, *env_path)


def _user_modules(ep: Any) -> list[str]:
    names = []
    if ep.trainable.kind == "function":
        names.append(ep.trainable.run.split(":")[0])
    if ep.env is not None and ep.env.kind == "class":
        names.append(ep.env.env.split(":")[0])
    return names


def _module_files(top: str, folders: tuple[str, ...]) -> list[str]:
    """The files of a user's top-level module found in `folders` (an installed one travels not:
    the cluster's image must have it), with the small .py files beside it."""
    for folder in map(Path, folders):
        package, single = folder / top, folder / f"{top}.py"
        if package.is_dir() or single.is_file():
            found = [str(package if package.is_dir() else single)]
            siblings = sorted(p for p in folder.glob("*.py") if p.name != single.name)
            found += [str(p) for p in siblings if p.stat().st_size <= MAX_SIBLING_BYTES]
            return found
    return []


def _package_dir(module: Any) -> str:
    return str(Path(module.__file__).resolve().parent)
