"""Where Ray runs for a run: a local Ray on loopback, sized to the plan and stopped at the end,
or a cluster joined with `--address` / RAY_ADDRESS, with this package, `trainables/` and the
user's modules shipped to its nodes as Ray `py_modules`; and whether the plan fits it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

import trainables
import tune_app
from tune_app.errors import SpecError
from tune_app.interrupts import reclaim
from tune_app.plan import Plan
from tune_app.ray_internals.startup import (
    TUNE_TRIAL_ENV,
    daemons_in_own_session,
    node_on_loopback,
    signals_left_to_the_driver,
    stop_local_ray,
)

# Ray Train's own switch (ray.train.v2._internal.constants): with it off, a trial process's
# `ray.train.report`, `get_checkpoint` and `get_context` are Train's first versions, which hand
# over to ray.tune's in a Tune trial. Trainables as Ray 2.7 to 2.40 documented them run; Train's
# second versions raise DeprecationWarning in a Tune trial, failing every one.
TRAIN_FUNCTIONS_ENV = {"RAY_TRAIN_V2_ENABLED": "0"}


@contextlib.contextmanager
def ray_for(plan: Plan, address: str | None, verbosity: int) -> Iterator[None]:
    """Ray for this run: the cluster named by `--address` / RAY_ADDRESS joined, or a local Ray
    started and, at the end, stopped."""
    address = cluster_address(address)
    kwargs: dict[str, Any] = dict(
        include_dashboard=False,
        logging_level=logging.WARNING if verbosity >= 2 else logging.ERROR,
        # Workers' own output (trainables' prints, RLlib's warnings) only with -v.
        log_to_driver=verbosity >= 2,
    )
    if address:
        with signals_left_to_the_driver():
            ray.init(address=address, runtime_env=runtime_env(plan), **kwargs)
        reclaim()
        try:
            yield
        finally:
            ray.shutdown()
        return
    path = local_pythonpath(plan)
    if path:
        os.environ["PYTHONPATH"] = path  # the local Ray's workers inherit it
    # What Tune would give each trial actor as its runtime env, inherited instead: see
    # trials_on_prestarted_workers.
    for key, value in {**TUNE_TRIAL_ENV, **TRAIN_FUNCTIONS_ENV}.items():
        os.environ.setdefault(key, value)
    try:  # an interruption while Ray starts stops what did start
        with daemons_in_own_session(), node_on_loopback(), signals_left_to_the_driver():
            ray.init(address="local", num_cpus=int(plan.cpus), **kwargs)
        reclaim()  # should a handler of Ray's have got through
        yield
    finally:
        stop_local_ray()


def check_cluster(plan: Plan) -> None:
    """SpecError when one trial asks for more CPUs or GPUs than the cluster has."""
    have = ray.cluster_resources()
    for ep in plan.experiments:
        for key in ("CPU", "GPU"):
            need = sum(b.get(key, 0.0) for b in ep.bundles)
            if need > have.get(key, 0.0):
                raise SpecError(
                    f"one trial needs {need:g} {key}s (bundles {list(ep.bundles)}) but the "
                    f"cluster has {have.get(key, 0.0):g}",
                    path=f"{ep.experiment.key_path}.resources_per_trial",
                    suggestion="ask for fewer resources per trial",
                )


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
    """The runtime env of the driver's job on a cluster: the code itself, as py_modules, and
    TRAIN_FUNCTIONS_ENV."""
    modules = [_package_dir(tune_app), _package_dir(trainables)]
    for ep in plan.experiments:
        for name in _user_modules(ep):
            modules += _module_files(name.split(".")[0], _search_path(ep))
    return {"py_modules": list(dict.fromkeys(modules)), "env_vars": dict(TRAIN_FUNCTIONS_ENV)}


def _search_path(ep: Any) -> tuple[str, ...]:
    env_path = ep.env.search_path if ep.env is not None else ()
    return (*ep.trainable.kind.search_path, *env_path)


def _user_modules(ep: Any) -> list[str]:
    names = list(ep.trainable.kind.user_modules)
    if ep.env is not None:
        names += [e.env.split(":")[0] for e in ep.env.members if e.kind == "class"]
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
