"""Experiment trackers (MLflow, Weights & Biases): one table entry per tracker.

Each entry holds its options model (what `trackers.<name>` may say), the package it needs
(`extras.EXTRAS` says how to install it), a check of what it needs besides (W&B's API key),
and where its `Sink` lives (`mirror`), imported only when a run builds it. `check` runs in the
plan, before Ray starts; what a run does with its trackers is in `tune_app.trackers.run`.
Ray-free.
"""

from __future__ import annotations

import netrc
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel

from tune_app.errors import SpecError
from tune_app.extras import require
from tune_app.rundir.allowed import local_store, store_problem
from tune_app.trackers.options import Chosen, MlflowOptions, TrackersSpec, WandbOptions

__all__ = ["TRACKERS", "Chosen", "MlflowOptions", "TrackersSpec", "WandbOptions", "check"]


@dataclass(frozen=True)
class Tracker:
    """One tracker: its options, the package and extra it needs, its callback."""

    name: str
    options: type[BaseModel]
    module: str  # the package imported for it (checked installed before Ray starts)
    sink: str  # "module:Class" of its `mirror.Sink`, built with (options, target)
    # What else it needs that is missing, as (its option or "", what, how to fix it), or None.
    needs: Callable[[Any], tuple[str, str, str] | None] = lambda options: None
    # The stores it writes, as (option, URI or path) pairs, checked by `rundir.allowed`.
    stores: Callable[[Any], tuple[tuple[str, str], ...]] = lambda options: ()


def _mlflow_store(options: MlflowOptions) -> tuple[str, str, str] | None:
    """MLflow 3.13+ refuses its file store (a folder or a `file:` URI) unless the user opts in."""
    uri = options.tracking_uri
    if uri is None or urlparse(uri).scheme.lower() not in ("", "file"):
        return None
    if os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() in ("true", "1"):
        return None
    database = Path(local_store(uri) or ".").parent / "mlflow.db"  # its artifacts: mlruns beside
    return (
        "tracking_uri",
        f"{uri!r} is MLflow's file store, which MLflow 3.13 and later refuse: a run logs nothing",
        f"write a database, as sqlite:///{database}, or a server's URI; or set "
        "MLFLOW_ALLOW_FILE_STORE=true to keep the file store (`mlflow migrate-filestore` moves "
        "one into a database)",
    )


def _wandb_key(options: WandbOptions) -> tuple[str, str, str] | None:
    """Online W&B needs an API key: WANDB_API_KEY, or a netrc entry for its host."""
    if options.mode != "online" or os.environ.get("WANDB_API_KEY"):
        return None
    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or ""
    try:
        found = netrc.netrc(os.environ.get("NETRC")).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        found = None
    if found and found[2]:
        return None
    return (
        "",
        f"W&B's online mode needs an API key, and none was found (WANDB_API_KEY, or a "
        f"netrc entry for {host} as `wandb login` writes)",
        "set WANDB_API_KEY or run `wandb login`, or write mode: offline",
    )


TRACKERS: dict[str, Tracker] = {
    t.name: t
    for t in (
        Tracker(
            "mlflow",
            MlflowOptions,
            "mlflow",
            "tune_app.trackers.mlflow_runs:MlflowSink",
            needs=_mlflow_store,
            stores=lambda o: (("tracking_uri", o.tracking_uri),) if o.tracking_uri else (),
        ),
        Tracker(
            "wandb",
            WandbOptions,
            "wandb",
            "tune_app.trackers.wandb_runs:WandbSink",
            needs=_wandb_key,
            stores=lambda o: (("dir", o.dir),) if o.dir else (),
        ),
    )
}


def chosen(own: TrackersSpec | None, top: TrackersSpec | None, path: str) -> tuple[Chosen, ...]:
    """The trackers of an experiment at `path`: the file's, each replaced by the experiment's
    entry of the same name where it writes one (an entry written as null turns it off)."""
    found = []
    for name in TRACKERS:
        if own is not None and name in own.model_fields_set:
            options, where = getattr(own, name), f"{path}.trackers.{name}"
        elif top is not None:
            options, where = getattr(top, name), f"trackers.{name}"
        else:
            options = None
        if options is not None:
            found.append(Chosen(name, options, where))
    return tuple(found)


def check(trackers: tuple[Chosen, ...]) -> None:
    """Raise SpecError for a tracker whose package is not installed, that cannot run here, or
    whose local store lies where a run may not write (`rundir.allowed`)."""
    for one in trackers:
        entry = TRACKERS[one.name]
        require(f"the {one.name} tracker", (entry.module,), one.key_path)
        for option, where in entry.stores(one.options):
            problem = store_problem(where)
            if problem is not None:
                raise SpecError(
                    f"{one.name} cannot write its store there: {problem}",
                    path=f"{one.key_path}.{option}",
                    suggestion="name a folder of yours (or a server's URI)",
                )
        missing = entry.needs(one.options)
        if missing is not None:
            option, what, fix = missing
            path = f"{one.key_path}.{option}" if option else one.key_path
            raise SpecError(what, path=path, suggestion=fix)
