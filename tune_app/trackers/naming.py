"""What a tracker's run holds for one trial, as plain data: its name, params, tags, step and
final status. Ray-free and tracker-free, so both trackers say the same and tests need neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tune_app.config_keys import restore_private_keys
from tune_app.errors import first_line
from tune_app.rundir.layout import flatten
from tune_app.rundir.records import ERRORED, TrialOutcome
from tune_app.scoring import finite
from tune_app.seeds import SEED_KEY

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan

TAG = "tune_app."  # the prefix of the app's own tags
TRIAL_TAG = TAG + "trial_id"  # how a resumed run finds a trial's tracker run again
PARENT_TAG = TAG + "parent"  # the run holding the spec and summary.json (MLflow)
STATUS_TAG = TAG + "status"  # terminated, stopped early, failed: <cause>
ERROR_TAG = TAG + "error"  # a failed trial's error, its first line (the exception and message)
ITERATION = "training_iteration"  # in every result; a resumed run skips iterations logged
# RLlib's env steps sampled: the x axis of an RLlib trial's metrics, as RLlib plots them.
ENV_STEPS = ("num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime")
# Result keys that are not metrics of the trial (identities, clocks, flags).
NOT_METRICS = ("done", "pid", "timestamp", "trial_id", "should_checkpoint", "logged_at")


def run_name(trial_id: str) -> str:
    """A trial's run name: its id as the app prints it (`3c0de_00003`)."""
    return trial_id


@dataclass(frozen=True)
class Naming:
    """What every run of one experiment is named and tagged with."""

    experiment: str
    spec_file: str
    search: str
    scheduler: str
    seed: int | None
    seeds: bool  # the experiment runs each configuration on several seeds
    config_paths: tuple[str, ...]  # the spec's config paths: params of every run
    searched: tuple[str, ...]

    @classmethod
    def of(cls, ep: ExperimentPlan, spec_file: str) -> Naming:
        exp = ep.experiment
        written = tuple(flatten(exp.config))
        return cls(
            experiment=ep.name,
            spec_file=spec_file,
            search=exp.search.type,
            scheduler=exp.scheduler.type,
            seed=exp.seed,
            seeds=bool(exp.seeds),
            config_paths=tuple(dict.fromkeys([*written, *ep.searched])),
            searched=ep.searched,
        )

    def params(self, config: dict[str, Any]) -> dict[str, Any]:
        """The trial's value of each config path the spec wrote or searched, named as
        `analyze` names them (`model.lr`); values at an index (`a[0]`) under their path."""
        flat = flatten(restore_private_keys(config))
        return {p: flat[p] for p in self.config_paths if p in flat}

    def tags(self, trial_id: str, config: dict[str, Any]) -> dict[str, str]:
        """The app's tags of a trial's run."""
        tags = {
            TRIAL_TAG: trial_id,
            TAG + "experiment": self.experiment,
            TAG + "spec": self.spec_file,
            TAG + "search": self.search,
            TAG + "scheduler": self.scheduler,
        }
        seed = config.get(SEED_KEY) if self.seeds else self.seed
        if seed is not None:
            tags[TAG + "seed"] = str(seed)
        if self.seeds:
            params = self.params(config)
            tags[TAG + "configuration"] = " ".join(
                f"{k}={params[k]}" for k in self.searched if k in params and k != SEED_KEY
            )
        return tags


def step(result: dict[str, Any]) -> int:
    """The x axis of a result's metrics: RLlib's env steps, else Tune's timesteps_total, else
    the iteration."""
    flat = flatten(result, "/")
    for key in (*ENV_STEPS, "timesteps_total"):
        value = flat.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return int(value)
    return int(result.get(ITERATION) or 0)


def metrics(result: dict[str, Any]) -> dict[str, float]:
    """Every finite number of a result, under its key as Tune flattens it (`a/b`)."""
    found = {}
    for key, value in flatten(result, "/").items():
        if key not in NOT_METRICS and not key.startswith("config/"):
            if (number := finite(value)) is not None:
                found[key] = number
    return found


def status(outcome: TrialOutcome) -> str:
    """A trial's final status as its run's tag says it."""
    if outcome.status == ERRORED or outcome.cause:
        return f"failed: {outcome.cause or 'error'}"
    if outcome.stopped_early:
        return "stopped early"
    return outcome.status.lower()


def error(outcome: TrialOutcome) -> str:
    """A failed trial's error as its run's tag says it: the first line of its error (the
    exception and message), "" where it has no error or only blanks."""
    return first_line(outcome.error or "")[:500]
