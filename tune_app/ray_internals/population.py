"""PBT and PB2 that record each clone in the run folder's clones.jsonl.

Tune's own log (`pbt_global.txt`) names trials by their changing experiment tags and lands in
Tune's local experiment folder; this record names trial ids, the iterations of both trials and
exactly which mutated keys changed, so `analyze` and `report` can show who copied whom.
"""

from __future__ import annotations

import time
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import PopulationBasedTraining
from ray.tune.schedulers.pb2 import PB2

from tune_app.interrupts import stops_on_write_error
from tune_app.ray_internals.sparse import NumbersOnly
from tune_app.rundir.layout import append_line, flatten
from tune_app.rundir.location import RunLocation


class _RecordsClones(NumbersOnly, PopulationBasedTraining):
    """Appends one line per exploit to `<folder>/clones.jsonl`, flushed at once; sees the
    metric only where it is a number (`sparse`)."""

    folder: RunLocation | None = None

    @stops_on_write_error
    def _log_config_on_step(
        self,
        trial_state: Any,
        new_state: Any,
        trial: Trial,
        trial_to_clone: Trial,
        new_config: dict[str, Any],
    ) -> None:
        super()._log_config_on_step(trial_state, new_state, trial, trial_to_clone, new_config)
        if self.folder is None:
            return
        old, new = flatten(dict(trial.config)), flatten(dict(new_config))
        donor = flatten(dict(trial_to_clone.config))
        changed = {
            k: [old.get(k), new[k]]
            for k in new
            if k in self._mutated_paths() and old.get(k) != new[k]
        }
        event = {
            "trial_id": trial.trial_id,
            "from_trial": trial_to_clone.trial_id,
            # The PBT states hold the result being processed (the trial's own last_result is
            # still the one before it).
            "iteration": _iteration(trial_state, trial),
            "from_iteration": _iteration(new_state, trial_to_clone),
            "changed": changed,
            "from_values": {k: donor.get(k) for k in self._mutated_paths()},
            "logged_at": time.time(),  # results.jsonl rows after it ran with the new config
        }
        # A run begun when this held the folder's path, resumed, still has a Path here.
        folder = self.folder if isinstance(self.folder, RunLocation) else RunLocation(self.folder)
        path = folder.clones
        append_line(path, event)

    def _mutated_paths(self) -> list[str]:
        """Dotted config paths of the mutated keys (nested mutations flattened)."""
        return list(flatten({k: _leaf(v) for k, v in self._hyperparam_mutations.items()}))


def _iteration(state: Any, trial: Trial) -> int:
    """The training iteration of the result PBT judged `trial` by."""
    result = getattr(state, "last_result", None) or trial.last_result or {}
    return int(result.get("training_iteration", 0) or 0)


def _leaf(value: Any) -> Any:
    """A mutation as a tree whose leaves stand for the mutated keys."""
    if isinstance(value, dict):
        return {k: _leaf(v) for k, v in value.items()} or None
    return None


class AppPBT(_RecordsClones):
    """Tune's PopulationBasedTraining, recording clones."""

    def __init__(self, folder: RunLocation | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.folder = folder


class AppPB2(_RecordsClones, PB2):
    """Tune's PB2, recording clones."""

    def __init__(self, folder: RunLocation | None = None, **options: Any) -> None:
        PB2.__init__(self, **options)
        self.folder = folder

    def _mutated_paths(self) -> list[str]:
        return list(self._hyperparam_bounds)
