"""What a machine or a cluster holds, and the one count of what fits on it: how many trials of
given bundles run at once, counting every resource of every bundle (CPU, GPU, memory, custom)
against each node's totals, and why a trial that can never run does not fit; how every line says
a bundle (`amounts`); and the address of the cluster a run joins, with where it was given.

The plan's lines, the RLlib layout policy and the fit errors all ask `trials_at_once` and
`misfit`; nothing else divides CPUs by CPUs. Ray-free: the local machine is read from the OS as
Ray 2.60 reads it (`ray/_private/resource_and_label_spec.py`), a cluster's nodes by
`tune_app.cluster.machine_at`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from tune_app.command import APP

# Ray counts resources in fixed point, 1/10,000 of a unit (`ray/_raylet.pyx`'s
# FixedPoint): 0.25 GPU x 4 is exactly one GPU, as Ray schedules it.
_UNIT = 10_000
# Ray's `memory` resource on a node it starts: the memory available less the object store's
# share (DEFAULT_OBJECT_STORE_MEMORY_PROPORTION, 0.3), `_resolve_memory_resources`.
OBJECT_STORE_SHARE = 0.3
# The resources a message names in words, with their unit.
_WORDS = {"CPU": ("CPU", 1.0, ""), "GPU": ("GPU", 1.0, ""), "memory": ("memory", 1e9, " GB")}

Bundle = Mapping[str, float]


@dataclass(frozen=True)
class Machine:
    """The nodes trials run on, each as its resource totals (Ray's names: CPU, GPU, memory in
    bytes, custom resources); no nodes: not known yet (a cluster joined only at run time), where
    everything fits."""

    nodes: tuple[Mapping[str, float], ...]
    name: str = "the machine"  # in messages: "the machine", "the cluster at ADDR", "--cpus 16"
    memory_from: str = ""  # whose memory it counts, where not its own: said beside the figure

    @classmethod
    def local(
        cls,
        cpus: float | None = None,
        gpus: float | None = None,
        name: str = "the machine",
    ) -> Machine:
        """This machine as a local Ray started on it would count it, with what is given
        (`validate --cpus/--gpus`: the machine one plans for) in place of what is found."""
        totals = {
            "CPU": float(cpus if cpus is not None else os.cpu_count() or 1),
            "GPU": float(gpus if gpus is not None else local_gpus()),
        }
        memory = local_memory()
        if memory is not None:
            totals["memory"] = memory
        return cls(nodes=(totals,), name=name)

    @classmethod
    def planned(cls, cpus: float | None, gpus: float | None) -> Machine:
        """The machine `validate --cpus N --gpus M` plans for, named so in messages."""
        given = [f"--cpus {cpus:g}"] if cpus is not None else []
        given += [f"--gpus {gpus:g}"] if gpus is not None else []
        machine = cls.local(cpus, gpus, name=f"the machine of {' '.join(given)}")
        return replace(
            machine,
            memory_from="this machine's memory: --cpus and --gpus size CPUs and GPUs only; "
            "validate with --address of the cluster to plan for its memory",
        )

    @classmethod
    def unknown(cls, name: str = "the cluster") -> Machine:
        return cls(nodes=(), name=name)

    def share(self, fraction: Mapping[str, float]) -> Machine:
        """The part of each node one of several experiments running at once plans for: a
        fraction per resource (1 for one not named)."""
        nodes = tuple(
            {k: float(v) * fraction.get(k, 1.0) for k, v in n.items()} for n in self.nodes
        )
        return replace(self, nodes=nodes)

    @property
    def known(self) -> bool:
        return bool(self.nodes)

    def most(self, resource: str) -> float:
        """The most of `resource` on one node: what one bundle can be given at most."""
        return max((float(n.get(resource, 0.0)) for n in self.nodes), default=math.inf)

    def total(self, resource: str) -> float:
        """The sum over nodes; infinite when the machine is not known."""
        if not self.known:
            return math.inf
        return sum(float(n.get(resource, 0.0)) for n in self.nodes)

    @property
    def cpus(self) -> float:
        return self.total("CPU")

    def describe(self, memory: bool = True) -> str:
        """'16 CPUs, 1 GPU, 23 GB memory' (no GPUs: not said), or per node on a cluster:
        '2 nodes: 8 CPUs, ...'. Without `memory`, which moves as the machine is used, for
        lines that should read the same each time (validate's header)."""
        if not self.known:
            return f"{self.name} (not known before it is joined)"
        sizes = [_sizes(n, memory) for n in self.nodes]
        return sizes[0] if len(sizes) == 1 else f"{len(sizes)} nodes: " + "; ".join(sizes)


@dataclass(frozen=True)
class ClusterAddress:
    """The Ray cluster a run joins, and where its address came from: errors name that, not an
    option the user never gave."""

    text: str
    given_as: Literal["--address", "RAY_ADDRESS"] = "--address"

    @classmethod
    def of(cls, given: str | None) -> ClusterAddress | None:
        """`--address` (the API's `address`), else RAY_ADDRESS, else None: start a local Ray."""
        if given:
            return cls(given)
        found = os.environ.get("RAY_ADDRESS")
        return cls(found, "RAY_ADDRESS") if found else None

    @staticmethod
    def option(address: ClusterAddress | None) -> str | None:
        """The `--address` a resume command repeats: None without one, or where RAY_ADDRESS gave
        it (the shell that resumes has it still)."""
        return address.text if address and address.given_as == "--address" else None


def local_gpus() -> int:
    """The GPUs a local Ray would find, read as Ray 2.60's NvidiaGPUAcceleratorManager reads
    them without a driver library: CUDA_VISIBLE_DEVICES where set, else the driver's list."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v for v in visible.split(",") if v.strip()]
        return 0 if ids == ["NoDevFiles"] else len(ids)
    folder = Path("/proc/driver/nvidia/gpus")
    return len(list(folder.iterdir())) if folder.is_dir() else 0


def local_memory() -> float | None:
    """Ray's `memory` resource on a node it would start here: the memory available less the
    object store's share; None where /proc/meminfo cannot be read (then memory is not counted)."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return float(line.split()[1]) * 1024 * (1 - OBJECT_STORE_SHARE)
    return None


def amounts(resources: Bundle | Sequence[Bundle]) -> str:
    """Resources as every line and message says them: '{CPU: 4, GPU: 0.25}' (Ray's names),
    a trial's bundles as a list of those."""
    if isinstance(resources, Mapping):
        return "{" + ", ".join(f"{k}: {_number(k, float(v))}" for k, v in resources.items()) + "}"
    return "[" + ", ".join(amounts(b) for b in resources) + "]"


def _units(value: float) -> int:
    return round(float(value) * _UNIT)


def finer_than_ray(value: float) -> str | None:
    """Why Ray refuses `value` as an amount of a resource, or None: above 0 but below one unit of
    its fixed point, which reads as nothing (`ray_option_utils._validate_resource_quantity`,
    "cannot go beyond 0.0001"; Tune then fails inside its loop). Every amount a spec gives
    (`resources_per_trial`, `cpu_per_simulation`, RLlib's per-process CPUs and GPUs) is checked
    here."""
    if 0 < value and int(float(value) * _UNIT) == 0:
        return (
            f"{value:g} is finer than Ray counts resources: in steps of {1 / _UNIT:g}; allowed: "
            f"0 or a number >= {1 / _UNIT:g}"
        )
    return None


def _needs(bundles: Sequence[Bundle]) -> list[dict[str, int]]:
    """The bundles in Ray's units, biggest first, empty ones left out (they take nothing)."""
    out = [{k: _units(v) for k, v in b.items() if _units(v) > 0} for b in bundles]
    return sorted((b for b in out if b), key=lambda b: (b.get("GPU", 0), b.get("CPU", 0)))[::-1]


def trials_at_once(bundles: Sequence[Bundle], machine: Machine, limit: int) -> int:
    """How many trials of `bundles` fit on `machine` at the same time, at most `limit`: every
    bundle placed whole on one node, every resource counted (0: a trial never fits)."""
    needs = _needs(bundles)
    if not machine.known or not needs:
        return limit
    free = [{k: _units(v) for k, v in n.items()} for n in machine.nodes]
    if len(free) == 1:  # one node: the scarcest resource decides
        total: dict[str, int] = {}
        for b in needs:
            for k, v in b.items():
                total[k] = total.get(k, 0) + v
        return min(limit, *(free[0].get(k, 0) // v for k, v in total.items()))
    count = 0
    while count < limit:  # a cluster: place each bundle on the first node with room
        for b in needs:
            node = next((n for n in free if all(n.get(k, 0) >= v for k, v in b.items())), None)
            if node is None:
                return count
            for k, v in b.items():
                node[k] -= v
        count += 1
    return count


@dataclass(frozen=True)
class Misfit:
    """Why one trial can never run: the resource it lacks, what the trial (or, on a cluster,
    one bundle) needs of it and what the machine (or its biggest node) has; `text` says it."""

    resource: str
    need: float
    have: float
    text: str


def misfit(bundles: Sequence[Bundle], machine: Machine) -> Misfit | None:
    """Why a trial of `bundles` cannot run on `machine`, or None when it fits: a trial that
    reserves nothing at all (Ray refuses an empty head bundle with no other), a trial needing
    more of a resource than the machine has, or a bundle that no node can hold."""
    if not _needs(bundles):
        return Misfit(
            "CPU",
            0.0,
            machine.cpus,
            "one trial reserves nothing (Ray needs a trial to reserve "
            "some resource: it refuses an empty head bundle)",
        )
    if not machine.known or trials_at_once(bundles, machine, 1):
        return None
    need: dict[str, float] = {}
    for b in bundles:
        for k, v in b.items():
            need[k] = need.get(k, 0.0) + float(v)
    listed = f"(bundles {amounts(bundles)})"
    for k, v in sorted(need.items(), key=lambda kv: kv[0] != "CPU"):
        have = machine.total(k)
        if _units(v) > _units(have):
            return Misfit(
                k,
                v,
                have,
                f"one trial needs {_amount(k, v)} {listed} but {machine.name} has "
                f"{_amount(k, have)}"
                + (f" ({machine.describe()})" if len(machine.nodes) > 1 else "")
                + (f" ({machine.memory_from})" if k == "memory" and machine.memory_from else ""),
            )
    for b in bundles:  # enough in all, but some bundle fits no single node
        for k, v in b.items():
            biggest = machine.most(k)
            if _units(v) > _units(biggest):
                return Misfit(
                    k,
                    float(v),
                    biggest,
                    f"the bundle {amounts(b)} of one trial fits no node: "
                    f"{machine.name} has {machine.describe()}",
                )
    return Misfit(
        "CPU",
        need.get("CPU", 0.0),
        machine.cpus,
        f"one trial's bundles {amounts(bundles)} cannot be placed together on "
        f"{machine.name}: {machine.describe()}",
    )


def fewer_gpus(key: str, machine: Machine) -> str:
    """What to do about a trial asking for more GPUs than `machine` gives it, where `key` sets
    them: on a machine with GPUs, at most what one node has, or a fraction to share one; on one
    without, no GPU, or a plan for a machine that has them."""
    most = machine.most("GPU")
    if most > 0:
        return (
            f"a node has at most {_amount('GPU', most)}: lower {key} until a trial fits (a "
            f"fraction, {key}: 0.5, lets trials share a GPU), or set {key}: 0 to train on CPUs"
        )
    return (
        f"set {key}: 0 to train on CPUs, or plan for a machine with GPUs: {APP} validate SPEC "
        "--gpus N (or --address of a cluster that has them)"
    )


def _number(resource: str, value: float) -> str:
    """`value` of `resource` in its unit: '4 GB' of memory (Ray counts bytes), '0.25' GPU."""
    _, scale, unit = _WORDS.get(resource, (resource, 1.0, ""))
    return f"{value / scale:.3g}{unit}" if scale != 1.0 else f"{value:g}"


def _amount(resource: str, value: float) -> str:
    word, _, unit = _WORDS.get(resource, (resource, 1.0, ""))
    if unit:
        return f"{_number(resource, value)} {word}"
    return f"{value:g} {word}{'s' * (value != 1 and word in ('CPU', 'GPU'))}"


# A node's resources that are no size to report: its address marker, the object store, the
# accelerator's model name.
_UNSAID = ("node:", "object_store_memory", "accelerator_type:")


def _sizes(node: Mapping[str, float], memory: bool = True) -> str:
    custom = sorted(k for k in node if k not in _WORDS and not k.startswith(_UNSAID))
    keys = ["CPU", "GPU", *(["memory"] if memory else []), *custom]
    return ", ".join(
        _amount(k, float(node[k])) for k in keys if k in node and (k != "GPU" or node[k])
    )


def gpu_sharing(bundles: Sequence[Bundle], at_once: int) -> str | None:
    """What `at_once` trials of `bundles` running together do with GPUs: '2 trials share a GPU,
    0.25 GPU each' where more than one of them fits on a GPU, else 'a trial holds 0.5 GPU' (or
    2 GPUs); None for a trial without GPUs."""
    gpus = sum(float(b.get("GPU", 0.0)) for b in bundles)
    if gpus <= 0:
        return None
    sharing = min(at_once, _UNIT // _units(gpus))  # a GPU holds whole trials' fractions
    if sharing > 1:
        return f"{sharing} trials share a GPU, {gpus:g} GPU each"
    return f"a trial holds {gpus:g} GPU{'s' * (gpus > 1)}"
