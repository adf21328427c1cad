"""The trainable contract: what a trainable module declares (`INFO`), so the app never guesses.

A leaf module: `trainables/` and the registry import it, and it imports nothing of the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tune_app.errors import SpecError

# Keys Tune adds to every result of a function trainable; a stop or metric may use them.
AUTO_METRICS = (
    "training_iteration",
    "time_total_s",
    "time_this_iter_s",
    "time_since_restore",
    "iterations_since_restore",
    "timestamp",
)


@dataclass(frozen=True)
class Knob:
    """One config key a trainable reads: its type, default and a one-line doc."""

    name: str
    type: type
    default: Any
    doc: str


@dataclass(frozen=True)
class TrainableInfo:
    """What a trainable module declares, so the runner never guesses."""

    name: str
    fn: Callable[..., Any]
    doc: str
    metric: str
    mode: Literal["min", "max"]
    metrics: tuple[str, ...]  # every key it reports, beyond Tune's AUTO_METRICS
    knobs: tuple[Knob, ...] = ()
    simulations: int = 0  # default parallel simulations per trial; > 0: it needs at least one
    head_cpu: float = 1.0  # CPUs of the trial's own process (its head bundle)
    smoke: dict[str, Any] = field(default_factory=dict)  # config overrides for --smoke
    checkpoints: bool = False  # it reports checkpoints and resumes from them (PBT, resume)
    packages: tuple[str, ...] = ()  # optional packages it imports (`extras.EXTRAS` has each)

    @property
    def reported(self) -> tuple[str, ...]:
        return self.metrics + AUTO_METRICS

    def refuse_missing_knob(self, key: str, why: str, path: str | None = None) -> None:
        """SpecError unless the trainable reads config key `key`: `why` says what needs it."""
        names = [k.name for k in self.knobs]
        if key not in names:
            raise SpecError(
                f"trainable '{self.name}' takes no '{key}' config key, so {why}",
                path=path,
                allowed=names,
                suggestion=f"use a trainable that reads config['{key}'] (es_cartpole, RLlib's)",
            )
