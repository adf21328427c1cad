"""Where an Optuna search keeps its study: a journal file in the run folder.

Optuna's journal file is an append-only log; SQLite's commits took 21 ms a trial, which held a
3,000-trial TPE search to 0.8 of a hand-written Tuner's rate. A run begun before the journal
goes on with its optuna.db. Records are appended here, not by Optuna's backend, whose every
append takes a lock file and an fsync (five appends a trial, 5 ms of each trial's time in the
driver): the run folder has one writer (`rundir.lock`), and a killed process loses nothing it
wrote (an fsync guards against the machine's own crash, which results.jsonl is not guarded
against either). Optuna's backend still reads the file.

Tune pickles its OptunaSearch, storage and all, into the searcher's saved state, and a resume
unpickles it. `RunJournal` is therefore pickled as its path alone and opened afresh wherever it
is made or unpickled: a last line a killed driver left half-written is cut (Optuna's reader
stops at a broken line, and a record appended to it is lost with it), a lock file the killed
driver left is removed (the run folder has one writer, `rundir.lock`), and no byte offsets of
the file are carried over from before (it may since have been cut, or pulled from cloud storage).
"""

from __future__ import annotations

import io
import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

from optuna.storages.journal import (
    BaseJournalBackend,
    JournalFileBackend,
    JournalFileOpenLock,
)

from tune_app.rundir.files import cut_torn_tail, open_append, write_all
from tune_app.rundir.location import RunLocation

# Optuna's name for a journal's lock file: the journal's name and this (its LOCK_FILE_SUFFIX).
LOCK_SUFFIX = ".lock"


def study_storage(folder: RunLocation) -> Any:
    """The Optuna study's storage in run folder `folder`: its journal, or the SQLite file of a
    run begun before the journal."""
    import optuna

    if folder.optuna_db.exists():
        return optuna.storages.RDBStorage(f"sqlite:///{folder.optuna_db.resolve()}")
    return optuna.storages.JournalStorage(RunJournal(str(folder.optuna_journal.resolve())))


class RunJournal(BaseJournalBackend):
    """Optuna's journal file (`JournalFileBackend`) at `path`, opened as the module says."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._open()

    def _open(self) -> None:
        cut_torn_tail(Path(self.path))
        Path(self.path + LOCK_SUFFIX).unlink(missing_ok=True)  # left by an earlier release
        self._file = JournalFileBackend(self.path, lock_obj=JournalFileOpenLock(self.path))
        self._appending: io.FileIO | None = None  # opened at the first append

    def read_logs(self, log_number_from: int) -> Generator[dict[str, Any], None, None]:
        yield from self._file.read_logs(log_number_from)

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        """Whole lines, as Optuna's backend writes them, in one unbuffered write."""
        if self._appending is None:
            self._appending = open_append(Path(self.path))
        lines = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
        write_all(self._appending, lines.encode("utf-8"))

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._open()
