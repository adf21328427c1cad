"""One writer per run folder: a run (or a resume) holds its experiment folder's lock for its whole
life, and a second writer is refused with one line naming the process that holds it.

Two runs of one spec started together both passed the "is there a run here?" check and merged
their trials into one results.jsonl. A local folder's lock is an `fcntl` lock on a hidden file
beside it (`.<name>.lock`), held open by the process and removed as it lets go: the kernel
releases the lock on any exit, kill -9 included, so a crashed run never leaves a stale one. On
cloud storage, where nothing can hold a lock, the same file is a lease: an owner record rewritten
every HEARTBEAT_S while the run lives, taken over once it is LEASE_S old (a crashed run's; at
once when it names a process of this host that is gone), and deleted at the end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from tune_app.errors import StorageError, TuneAppError
from tune_app.rundir.files import read_text
from tune_app.rundir.location import RunLocation

HEARTBEAT_S = 10.0
LEASE_S = 60.0  # a lease not renewed for this long is a crashed run's
# After writing a lease, wait this long and read it back: of two runs that wrote at once, the
# one whose record is there holds it (cloud stores keep the last write).
SETTLE_S = 1.0


@dataclass(frozen=True)
class Owner:
    """Who holds a run folder: what the refused writer is told."""

    host: str
    pid: int
    started: str
    heartbeat: float = 0.0  # leases only: the time of the last renewal

    @classmethod
    def me(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S%z"))

    def alive(self) -> bool:
        """False when the owner was a process of this host that is gone (a crashed run here);
        True otherwise, and for another host's, which only its lease's age can tell."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}, started {self.started}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        try:
            data = json.loads(text)
            return cls(str(data["host"]), int(data["pid"]), str(data["started"]),
                       float(data.get("heartbeat", 0.0)))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None


class FolderBusy(TuneAppError):
    """Another live process writes the run folder (exit 2: nothing was written)."""


@contextlib.contextmanager
def hold(folders: list[RunLocation], *, resuming: bool = False) -> Iterator[None]:
    """Hold the lock of every folder (all or none) until the block ends, however it ends."""
    with contextlib.ExitStack() as stack:
        for folder in folders:
            stack.enter_context(
                _lease(folder, resuming) if folder.uri else _flock(folder, resuming)
            )
        yield


def writer_of(folder: RunLocation) -> Owner | None:
    """Who is writing `folder` now, for a reader to say so; None when no run holds it. Read from
    its lock's owner record without taking the lock (a reader holding it even for a moment
    would turn a run starting then away): a local lock file is there only while held, or left
    by a run killed with -9, whose process is gone; a lease counts while it is renewed."""
    if folder.uri:
        from tune_app.rundir import storage

        text = storage.read_text(folder.parent, folder.lock_name)
        owner = Owner.parse(text) if text is not None else None
        fresh = owner is not None and time.time() - owner.heartbeat < LEASE_S
        return owner if fresh and owner is not None and owner.alive() else None
    try:
        text = read_text(folder.lock_file)  # not a pipe or a link planted there
    except (OSError, UnicodeDecodeError):
        return None
    owner = Owner.parse(text)
    return owner if owner is not None and owner.alive() else None


@contextlib.contextmanager
def _flock(folder: RunLocation, resuming: bool) -> Iterator[None]:
    path = folder.lock_file
    made = _missing_ancestors(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle: IO[str] = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = Owner.parse(handle.read())
            handle.close()
            _remove_empty(made)
            raise _busy(folder, owner, resuming) from None
        # The holder before us unlinks the file as it lets go: locking that unlinked file would
        # not exclude anyone who opens the path now, so lock the path's file.
        if path.exists() and os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()
    try:
        _write_owner(handle, path)
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still held: nothing is left behind
        with contextlib.suppress(OSError):  # an owner record a full disk refused is dropped
            handle.close()  # releases the lock
        _remove_empty(made)


def _write_owner(handle: IO[str], path: Path) -> None:
    """Record who holds the lock; a full disk is a StorageError before anything ran."""
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(asdict(Owner.me())))
        handle.flush()
    except OSError as err:
        err.filename = err.filename or str(path)  # a failed flush names no file
        raise StorageError(err) from None


def _missing_ancestors(folder: Path) -> list[Path]:
    """The folders `mkdir(parents=True)` would make for `folder`, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders made for a lock, deepest first, while they are empty (a run that was
    refused leaves nothing; one that ran has its experiment folder in them)."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


@contextlib.contextmanager
def _lease(folder: RunLocation, resuming: bool) -> Iterator[None]:
    from tune_app.rundir import storage

    assert folder.uri is not None
    uri, name = folder.parent, folder.lock_name
    held = storage.read_text(uri, name)
    owner = Owner.parse(held) if held is not None else None
    if owner is not None and owner.alive() and time.time() - owner.heartbeat < LEASE_S:
        raise _busy(folder, owner, resuming)
    me = Owner.me()
    storage.write_text(uri, name, json.dumps({**asdict(me), "heartbeat": time.time()}))
    time.sleep(SETTLE_S)
    now = Owner.parse(storage.read_text(uri, name) or "")
    if now is None or (now.host, now.pid) != (me.host, me.pid):
        raise _busy(folder, now, resuming)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(Exception):  # a missed renewal is retried; LEASE_S allows 5
                storage.write_text(uri, name, json.dumps({**asdict(me), "heartbeat": time.time()}))

    beat = threading.Thread(target=renew, name="tune_app-lease", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join(timeout=5)
        with contextlib.suppress(Exception):
            storage.delete(uri, name)


def _busy(folder: RunLocation, owner: Owner | None, resuming: bool) -> FolderBusy:
    who = owner.describe() if owner is not None else "another process"
    if folder.uri:  # a lease: say when a crashed run's is taken over
        who += f"; its lease, renewed every {HEARTBEAT_S:g} s, lapses {LEASE_S:g} s after the last"
    if resuming:
        return FolderBusy(
            f"{folder.where} is still being run ({who}); resume it once that run has ended"
        )
    return FolderBusy(
        f"{folder.where} is being written by a run that is still going ({who}); wait for it to "
        "end, or pass --storage-path to run elsewhere"
    )
