"""The spec as resolved for a run: the frozen dataclasses `Experiment` (one experiment, the
file-level settings applied and its config parsed) and `Spec` (a loaded file). The models of a
file as written are `tune_app.spec.models`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tune_app.methods import Options
from tune_app.objectives import Limit, Objective
from tune_app.scoring import DEFAULT_SCOPE
from tune_app.space import grid_size
from tune_app.spec.models import CheckpointSpec, ExpectSpec, Mode, ResourcesSpec, TensorBoardSpec
from tune_app.trackers.options import Chosen


@dataclass(frozen=True)
class Experiment:
    """One experiment with the file-level settings applied and its config parsed."""

    name: str
    run: str
    env: str | None
    config: dict[str, Any]  # the parsed space: constants and `space.Domain`s
    stop: dict[str, float]
    num_samples: int
    resources: ResourcesSpec | None  # None: the trainable's default
    max_failures: int
    metric: str | None
    mode: Mode | None
    search: Options  # one of methods.SEARCHERS' options models
    scheduler: Options  # one of methods.SCHEDULERS' options models
    max_concurrent_trials: int | None
    seed: int | None
    seeds: tuple[int, ...]  # the seeds axis: each configuration runs once per seed; () none
    aggregate: str  # how a configuration's seeds are judged (tune_app.seeds)
    select: str  # what ranks configurations: their aggregate, or lcb (tune_app.rundir.noise)
    storage_path: str
    simulations: int | None  # None: the trainable's default
    cpu_per_simulation: float
    checkpoint: CheckpointSpec
    key_path: str  # where the experiment sits in its file, for messages
    expect: ExpectSpec = ExpectSpec()
    fail_fast: bool = False  # Tune's: the run ends at its first failed trial
    log_to_file: bool | str | tuple[str, str] = True  # Tune's: trial output to files
    scope: str = DEFAULT_SCOPE  # which value of its metric ranks a trial (see tune_app.scoring)
    tensorboard: TensorBoardSpec = TensorBoardSpec()  # result keys shown beyond the spec's
    time_budget_s: float | None = None  # Tune's: the search ends after this many seconds
    result_timeout_s: float | None = None  # a running trial silent this long fails
    result_buffer: int | None = None  # results a trial hands over per call (Tune's buffering)
    layout: str = "app"  # RLlib's sampling layout: the app's choice, or "rllib" (its defaults)
    trackers: tuple[Chosen, ...] = ()  # the trackers its trials are logged to
    # Several objectives (`metric: [a, b]`): metric and mode are then None, as Tune runs it.
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Limit, ...] = ()  # bounds a trial keeps to be best or on the front
    warm_start: tuple[str, ...] = ()  # earlier runs the search starts from (tune_app.warmstart)
    # Config path as run -> as the spec wrote it, where a key was read under another name (RLlib's
    # legacy keys: num_epochs -> num_sgd_iter).
    written_at: Mapping[str, str] = field(default_factory=dict)

    @property
    def buffered(self) -> bool:
        """Whether a trial hands the driver more than one result a call (`result_buffer`)."""
        return self.result_buffer is not None and self.result_buffer > 1

    def trials(self, envs: int = 1) -> int:
        """The trials its search makes: grid points (an env grid in the config among them) x
        `envs` (an env grid taken out of it) x samples x seeds."""
        return grid_size(self.config) * envs * self.num_samples * max(1, len(self.seeds))

    def written_path(self, path: str) -> str:
        """Where the spec wrote the config path `path` of the config as run."""
        for new, at in self.written_at.items():
            if path == new or path.startswith((f"{new}.", f"{new}[")):
                return at + path[len(new) :]
        return path


@dataclass(frozen=True)
class Spec:
    """A loaded spec file: its experiments, the form it was written in, and legacy warnings."""

    file: Path
    text: str
    form: Literal["classic", "app"]
    experiments: tuple[Experiment, ...]
    warnings: tuple[str, ...] = ()
