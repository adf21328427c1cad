"""PBT and PB2 that record each clone in the run folder's clones.jsonl.

Tune's own log (`pbt_global.txt`) names trials by their changing experiment tags and lands in
Tune's local experiment folder; this record names trial ids, the iterations of both trials and
exactly which mutated keys changed, so `analyze` and `report` can show who copied whom. A
resumed run restores each trial as Tune last saved it, and the record follows: the exploits
logged after that state are dropped as the trial restarts, and an exploit decided again on a
replayed iteration replaces its record. Tune's state is saved as each exploit is made, before
the trial runs with it (`save_state`), so no row of an exploit's timeline outlives its record.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import PopulationBasedTraining
from ray.tune.schedulers.pb2 import PB2

from tune_app.interrupts import stops_on_write_error
from tune_app.ray_internals.sparse import NumbersOnly
from tune_app.rundir.files import append_line, cut_torn_tail, jsonable, read_rows, write_text
from tune_app.rundir.layout import flatten, latest_clones
from tune_app.rundir.location import RunLocation


# A subclass: Tune's PBT names an exploit's donor and new config only to `_log_config_on_step`.
class RecordsClones(PopulationBasedTraining):
    """Tune's PBT recording each exploit in `<folder>/clones.jsonl`, written at once, as it
    stands in the trials' timelines (`latest_clones`), and none that Tune's saved state lost
    (`AppPBT` drops those)."""

    folder: RunLocation | None = None
    mutated: tuple[str, ...] = ()  # dotted config paths of the mutated keys
    unsaved: tuple[Trial, ...] = ()  # trials exploited that Tune's saved state does not hold

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
        path = self._clones()
        if path is None:
            return
        old, new = flatten(dict(trial.config)), flatten(dict(new_config))
        donor = flatten(dict(trial_to_clone.config))
        changed = {
            k: [old.get(k), new[k]] for k in new if k in self.mutated and old.get(k) != new[k]
        }
        event = {
            "trial_id": trial.trial_id,
            "from_trial": trial_to_clone.trial_id,
            # The PBT states hold the result being processed (the trial's own last_result is
            # still the one before it).
            "iteration": _iteration(trial_state, trial),
            "from_iteration": _iteration(new_state, trial_to_clone),
            "changed": changed,
            "from_values": {k: donor.get(k) for k in self.mutated},
            "logged_at": time.time(),  # results.jsonl rows after it ran with the new config
        }
        _record(path, jsonable(event))
        self.unsaved = (*self.unsaved, trial)  # `AppPBT` has Tune save them once made

    def _clones(self) -> Path | None:
        """The clone log; None without a run folder (a scheduler built outside a run)."""
        if self.folder is None:
            return None
        # A run begun when this held the folder's path, resumed, still has a Path here.
        folder = self.folder if isinstance(self.folder, RunLocation) else RunLocation(self.folder)
        return folder.clones


def _record(path: Path, event: dict[str, Any]) -> None:
    """Append `event` to the clone log; where it is its trial's previous record decided again (a
    trial restored to before an exploit, deciding it again), the log is rewritten atomically
    without that record, as `latest_clones` keeps it."""
    cut_torn_tail(path)
    logged = read_rows(path.read_bytes()) if path.exists() else []
    kept = latest_clones([*logged, event])
    if len(kept) <= len(logged):
        _rewrite(path, kept)
        return
    append_line(path, event)


def _forget_unkept(path: Path, trial_id: str, config: dict[str, Any]) -> None:
    """Drop `trial_id`'s last clone records whose new values `config` does not hold.

    Tune restores a trial's config together with its checkpoint, so the config a trial restarts
    with is the one its last kept exploit gave it; the records after that one are of exploits
    the restored state never saw. A record that changed nothing says nothing, and is kept.
    """
    if not path.exists():
        return
    logged = read_rows(path.read_bytes())
    values = flatten(config)
    unkept: set[int] = set()
    for i in reversed(range(len(logged))):
        event = logged[i]
        if event.get("trial_id") != trial_id:
            continue
        changed = event.get("changed") or {}
        if all(values.get(k) == v[-1] for k, v in changed.items() if isinstance(v, list) and v):
            break
        unkept.add(i)
    if unkept:
        _rewrite(path, [e for i, e in enumerate(logged) if i not in unkept])


def _rewrite(path: Path, events: list[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(e, allow_nan=False) + "\n" for e in events))


def _iteration(state: Any, trial: Trial) -> int:
    """The training iteration of the result PBT judged `trial` by."""
    result = getattr(state, "last_result", None) or trial.last_result or {}
    return int(result.get("training_iteration", 0) or 0)


def _leaf(value: Any) -> Any:
    """A mutation as a tree whose leaves stand for the mutated keys."""
    if isinstance(value, dict):
        return {k: _leaf(v) for k, v in value.items()} or None
    return None


class RecordsClonesPB2(RecordsClones, PB2):  # the same hook, in Tune's PB2
    """Tune's PB2, recording clones."""


class AppPBT(NumbersOnly):
    """Tune's PopulationBasedTraining recording clones, seeing the metric only where it is a
    number (`sparse`)."""

    def __init__(self, folder: RunLocation | None = None, **options: Any) -> None:
        self.recorder: RecordsClones = self.recording(**options)
        self.recorder.folder = folder
        self.recorder.mutated = self.mutated(options)
        super().__init__(self.recorder)

    @staticmethod
    def recording(**options: Any) -> RecordsClones:
        return RecordsClones(**options)

    @staticmethod
    def mutated(options: dict[str, Any]) -> tuple[str, ...]:
        """Dotted config paths of the mutated keys (nested mutations flattened)."""
        mutations = options.get("hyperparam_mutations") or {}
        return tuple(flatten({k: _leaf(v) for k, v in mutations.items()}))

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict[str, Any]) -> str:
        path = self.recorder._clones()
        if path is not None and result.get("iterations_since_restore") == 1:
            # (Re)started from a checkpoint: a resume restores the trial as Tune last saved it,
            # and an exploit logged after that (the driver killed before the next save) is
            # gone from its timeline; PBT may decide it again, from this result on.
            _forget_unkept(path, trial.trial_id, jsonable(trial.config))
        self.recorder.unsaved = ()  # the exploits this result makes
        decision = super().on_trial_result(tune_controller, trial, result)
        if self.recorder.unsaved:
            exploited, self.recorder.unsaved = self.recorder.unsaved, ()
            save_state(tune_controller, exploited)
        return decision


def save_state(tune_controller: Any, exploited: tuple[Trial, ...]) -> None:
    """Have Tune save its experiment state now, the `exploited` trials as they are, and wait
    until it is in the run folder.

    An exploit changes a trial's config and the checkpoint it goes on from, and Tune saves its
    state only every few seconds. A run killed after the exploited trial ran an iteration with
    its new config, before that save, was resumed from the state before the exploit: the trial
    went on from its own checkpoint with its old config, and the lost iteration's row (which had
    replaced the row it now goes on from) stayed in results.jsonl, its clone record forgotten.
    Saved as the exploit is made (before the trial runs with it), a kill either comes before,
    with no row of the exploit's timeline written and its record forgotten on resume, or
    after, and the resumed trial replays the exploit, replacing its rows.

    Tune saves only the trials marked since its last save (its events mark them, a config set
    by PBT does not: an exploit of a paused trial, in synchronous PBT, stayed unsaved until the
    trial ran again), hence the marks. Schedulers are given Tune's controller behind a wrapper
    that warns once of any attribute off its list; the controller is taken from it."""
    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    for trial in exploited:
        controller._mark_trial_to_checkpoint(trial)
    controller.checkpoint(force=True, wait=True)


class AppPB2(AppPBT):
    """Tune's PB2, likewise."""

    @staticmethod
    def recording(**options: Any) -> RecordsClones:
        return RecordsClonesPB2(**options)

    @staticmethod
    def mutated(options: dict[str, Any]) -> tuple[str, ...]:
        return tuple(options.get("hyperparam_bounds") or {})


# The names runs saved before these were public pickled (saved_state.PICKLED_NAMES).
_RecordsClones = RecordsClones
_RecordsClonesPB2 = RecordsClonesPB2
