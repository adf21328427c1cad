"""The pickles Tune saved in a run folder, as bytes with where each lies: what `resume` hands
back to Tune to unpickle, so what a later release must still read (`tune_app.saved_state`
checks it). Ray-free."""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tune_app.rundir.layout import TUNER_STATE, read_newest_state

# Tune's own pickles beside tuner.pkl: its searcher's state (`searcher-state-<session>.pkl`)
# and its callbacks' (`callback-states-<session>.pkl`).
_PICKLES = "*.pkl"
_STATES = "experiment_state-*.json"


def tune_pickles(folder: Path, *, trials: bool = False) -> Iterator[tuple[str, bytes]]:
    """Each pickle Tune reads back to resume the run in `folder`, as (where, bytes): tuner.pkl
    (the run config with the app's callbacks and stopper, the searcher, the scheduler), the
    searcher's and callbacks' states, and the pickles inside the newest experiment state (the
    stopper again, and each trial's storage, results and any config value JSON cannot hold, as
    hex). With `trials`, also every `*.pkl` in the trials' folders (params.pkl, error.pkl, their
    checkpoints') and every experiment state file, not only the newest."""
    folder = Path(folder)
    files = sorted(folder.rglob(_PICKLES) if trials else folder.glob(_PICKLES))
    tuner = folder / TUNER_STATE
    for path in ([tuner] if tuner.exists() else []) + [p for p in files if p != tuner]:
        yield path.relative_to(folder).as_posix(), path.read_bytes()
    if trials:
        states = [(p, _read_json(p)) for p in sorted(folder.glob(_STATES))]
    else:
        newest = read_newest_state(folder)
        states = [newest] if newest is not None else []
    for path, data in states:
        for pickled in _embedded(data):
            yield f"{path.name} (trial_data)", pickled


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # torn by a kill: Tune reads the one before
        return None


def _embedded(value: Any) -> Iterator[bytes]:
    """The pickles a JSON value holds as hex strings, at any depth, also inside the JSON text
    nested in it (Tune keeps each trial's state as a JSON string)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _embedded(item)
    elif isinstance(value, list):
        for item in value:
            yield from _embedded(item)
    elif isinstance(value, str) and value.startswith("{"):
        try:
            nested = json.loads(value)
        except ValueError:
            return
        yield from _embedded(nested)
    elif isinstance(value, str) and value.startswith("80") and len(value) % 2 == 0:
        try:  # 0x80: the PROTO opcode every pickle of protocol 2 or later starts with
            yield binascii.unhexlify(value)
        except binascii.Error:
            return
