"""What every searcher and scheduler entry shares: the options model a spec writes, and the
context building a Tune object needs from its experiment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tune_app.objectives import Limit

if TYPE_CHECKING:
    from tune_app.rundir.location import RunLocation


class Options(BaseModel):
    """A searcher's or scheduler's options as written in a spec: unknown keys are errors, and
    values are taken as written, as in the spec's own models (strict: `max_t: true` or "9" is
    not a number; a float key takes an int; a tuple-typed key turns a YAML list into a tuple)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, strict=True, allow_inf_nan=False
    )
    type: str

    def options(self) -> dict[str, Any]:
        """The options without `type`, as Tune's constructor takes them."""
        return self.model_dump(exclude={"type"})

    @property
    def pauses(self) -> str | None:
        """The option, as a spec writes it, that makes the scheduler pause trials where its
        entry does not ("hard_stop: false"); None where none does."""
        return None


@dataclass(frozen=True)
class Context:
    """What building a Tune object needs from the experiment besides its options."""

    seed: int | None = None
    max_concurrent_trials: int | None = None
    folder: RunLocation | None = None  # the experiment's run folder (a searcher's own files)
    searcher: str = "grid"  # the experiment's searcher (BOHB pairs with its own HyperBand)
    seeds_aggregate: str | None = None  # with seeds: how a configuration's seeds are judged
    seeds: tuple[int, ...] = ()  # the seeds axis (grid and random searches make its trials)
    # Several objectives: their result keys and modes, which the searcher holds (Tune's
    # TuneConfig then names no metric); () for one.
    objectives: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    constraints: tuple[Limit, ...] = ()  # bounds a trial keeps (Optuna's samplers are told)
    # Warm start (`tune_app.warmstart`): earlier configurations, each its searched values by
    # path, and what the searcher is told each scored (`told`: empty where it runs them first,
    # or where they are the grid points left to run); `space` is Tune's param_space, which a
    # searcher handed values by index (`by_index.handed_points`) needs to hand them.
    earlier: tuple[dict[str, Any], ...] = ()
    told: tuple[float, ...] = ()
    space: Any = None
