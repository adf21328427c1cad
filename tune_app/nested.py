"""Simulations inside a trial: Ray tasks placed in the bundles the trial reserved for them.

A trial declared with `simulations: k` holds one head bundle plus k simulation bundles (see
plan.py). Tasks launched here ask for exactly one simulation bundle's resources, so they run in
the trial's placement group, in parallel, and never wait on CPUs held by other trials.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def simulation_bundles() -> list[dict[str, float]]:
    """The bundles this trial reserved for its simulations (every bundle but the head)."""
    from ray import tune

    resources = tune.get_context().get_trial_resources()
    bundles = [dict(b) for b in resources.bundles]
    return bundles if resources.head_bundle_is_empty else bundles[1:]


@dataclass(frozen=True)
class Batch:
    """What a batch of simulations returned, and how much of it ran at the same time."""

    results: list[Any]
    wall_s: float
    busy_s: float  # summed run time of the tasks
    overlap: int  # most tasks running at one moment

    @property
    def parallelism(self) -> float:
        """Busy time over wall time: k when k simulations ran fully in parallel."""
        return self.busy_s / self.wall_s if self.wall_s > 0 else 0.0


def run_simulations(
    remote_fn: Any, jobs: Sequence[tuple], bundles: list[dict[str, float]]
) -> Batch:
    """Run `remote_fn(*job)` for each job, one task per simulation bundle, and wait for all.

    `remote_fn` must return `(result, start, end)` with `time.time()` stamps (see `timed`).
    """
    began = time.time()
    futures = []
    for i, job in enumerate(jobs):
        bundle = bundles[i % len(bundles)]
        options = {"num_cpus": bundle.get("CPU", 0.0), "num_gpus": bundle.get("GPU", 0.0)}
        futures.append(remote_fn.options(**options).remote(*job))
    import ray

    done = ray.get(futures)
    wall = time.time() - began
    spans = [(start, end) for _, start, end in done]
    return Batch(
        results=[r for r, _, _ in done],
        wall_s=wall,
        busy_s=sum(end - start for start, end in spans),
        overlap=max_overlap(spans),
    )


def max_overlap(spans: Sequence[tuple[float, float]]) -> int:
    """Most intervals open at one moment."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = best = 0
    for _, step in events:
        running += step
        best = max(best, running)
    return best
