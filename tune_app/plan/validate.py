"""A spec given to the Python API (a file, a mapping as the YAML would hold it, or a loaded
`Spec`) checked and planned for a machine: this one, one of a given size, or a running
cluster's nodes. `tune_app.api` gives out `validate`; its `run` plans through `plan_of`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app.errors import SpecError
from tune_app.spec.loading import DICT_SPEC, mapping_text

if TYPE_CHECKING:
    from tune_app.plan.types import Plan
    from tune_app.resources import ClusterAddress
    from tune_app.spec import Spec

SpecSource = str | os.PathLike[str] | Mapping[str, Any]


def validate(
    spec: SpecSource | Spec,
    *,
    smoke: bool = False,
    storage_path: str | os.PathLike[str] | None = None,
    rllib_checks: bool = False,
    cpus: float | None = None,
    gpus: float | None = None,
    address: str | None = None,
) -> Plan:
    """The checked plan of a spec (a file, a mapping as the YAML would hold it, or a loaded
    `Spec`): what `tune_app validate` prints. (`tune_app.plan` makes it.)

    Planned for this machine; for one of `cpus` CPUs and `gpus` GPUs (a machine one does not
    have); or, with `address`, for the running cluster there, whose nodes are read by joining
    it for a moment (no trial is started). Ray-free unless `address` is given; the spec is
    checked before the cluster is joined. `address` with `cpus` or `gpus` is refused: each names
    the machine planned for."""
    from tune_app.resources import ClusterAddress

    if address is not None and (cpus is not None or gpus is not None):
        given = "--cpus" if cpus is not None else "--gpus"
        raise SpecError(
            "plans for a machine of that size, and --address for the cluster there: not both",
            path=given,
            suggestion="leave out --address to plan for the size given, or --cpus and --gpus to "
            "plan for the cluster's nodes",
        )
    cluster = None if address is None else ClusterAddress(address)
    return plan_of(
        spec, smoke, storage_path, rllib_checks=rllib_checks, cpus=cpus, gpus=gpus, cluster=cluster
    )


def plan_of(
    spec: SpecSource | Spec,
    smoke: bool,
    storage_path: str | os.PathLike[str] | None,
    *,
    rllib_checks: bool,
    cluster: ClusterAddress | None,
    cpus: float | None = None,
    gpus: float | None = None,
) -> Plan:
    """`validate`'s plan, for the cluster at `cluster` (its errors name where that was given)."""
    from tune_app.plan.make import make_plan
    from tune_app.resources import Machine

    loaded = _load(spec)
    where = None if storage_path is None else str(storage_path)
    machine: Machine | None = None
    if cluster is not None:
        # First against a cluster not yet known: a bad spec never joins it.
        make_plan(loaded, machine=Machine.unknown(), storage_path=where, smoke=smoke)
        from tune_app.cluster import machine_at  # imports Ray

        try:
            machine = machine_at(cluster)
        except SpecError as err:
            raise err.with_file(str(loaded.file)) from None
    elif cpus is not None and not math.isfinite(cpus):
        machine = Machine.unknown()
    elif cpus is not None or gpus is not None:
        machine = Machine.planned(cpus, gpus)
    return make_plan(
        loaded, machine=machine, storage_path=where, smoke=smoke, rllib_checks=rllib_checks
    )


def _load(source: SpecSource | Spec) -> Spec:
    from tune_app.spec import Spec
    from tune_app.spec import resolve as specs

    if isinstance(source, Spec):
        return source
    if isinstance(source, Mapping):
        # The same path as a file: errors name the mapping, the run keeps its text as spec.yaml.
        return specs.loads(mapping_text(dict(source)), Path(DICT_SPEC))
    return specs.load(os.fspath(source))
