"""The plan's words for a search and a layout, as `validate` prints them."""

from __future__ import annotations

from tune_app.plan.types import Plan
from tune_app.spec.resolved import Experiment


def layout_lines(plan: Plan) -> list[str]:
    """One line per experiment whose kind chose a layout: what, how many trials at once, why."""
    return [f"{ep.name}: {ep.layout.line}" for ep in plan.experiments if ep.layout is not None]


def describe_scheduler(exp: Experiment) -> str:
    """One line naming the scheduler and its options."""
    sched = exp.scheduler
    opts = sched.model_dump(exclude={"type"})
    return sched.type + (" " + ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else "")


def describe_search(exp: Experiment) -> str:
    """One line naming the searcher and its options."""
    opts = exp.search.model_dump(exclude={"type"})
    if exp.seed is not None:
        opts["seed"] = exp.seed
    return exp.search.type + (" " + ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else "")
