"""Tune's copies of its files to the run folder, made whole-file.

Tune writes its experiment state, the searcher's state and the trials' files (result.json,
progress.csv, error.pkl, events) in a staging folder under Ray's session and copies that folder
to the run folder in a background thread, writing each file in place. A full disk (or a driver
killed mid-copy) left them torn: the experiment state cut at 16 KB, after the open had already
truncated the last whole one, so `resume` had no state to continue from, and an
empty error.pkl that Tune itself then failed to read back (EOFError) as the run ended. While
`whole_file_uploads` holds, each file is copied to a temporary file beside it and renamed over the
old one, so a copy that fails leaves the last whole file; a file unchanged since it was last
copied (size and modification time) is not copied again, so a search of many trials copies only
the running ones' files.

Private Ray symbol: `ray.train._internal.storage._upload_to_fs_path`, replaced while a Tuner
fits (`_FilesystemSyncer._sync_up_command` looks it up at each copy; `SyncConfig` no longer takes
a syncer, and a `storage_filesystem` of the app's would change every reader of the folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tune_app.ray_internals.replacing import replaced

# What `upload` has copied in this process, and Ray's own function it stands in for. Module
# state, not a closure's: Tune keeps the last copy command in the syncer of every trial's storage
# and pickles that storage into each reused actor's `reset`; a closure went by value, its `copied`
# with it (a few hundred KB per reset at 1,000 trials), while the copy thread added to it:
# "RuntimeError: dictionary changed size during iteration" ended 5,000-trial searches. A
# module-level function is pickled by name.
_copied: dict[str, tuple[int, int]] = {}
_original: list[Any] = []


@contextlib.contextmanager
def whole_file_uploads() -> Iterator[None]:
    """While this holds, Tune's copies of a folder to a local run folder replace files whole."""
    from ray.train._internal import storage

    original = storage._upload_to_fs_path
    if original is upload:  # held already (an experiment within an experiment's process)
        yield
        return
    _original[:] = [original]
    _copied.clear()
    with replaced(storage, "_upload_to_fs_path", upload):
        yield


def upload(local_path: str, fs: Any, fs_path: str, exclude: list[str] | None = None) -> None:
    """Ray's `_upload_to_fs_path`, a folder to a local filesystem copied file by file whole."""
    import pyarrow.fs
    from ray.train._internal import storage

    if exclude or not isinstance(fs, pyarrow.fs.LocalFileSystem) or os.path.isfile(local_path):
        original = _original[0] if _original else storage._upload_to_fs_path
        original(local_path, fs, fs_path, exclude)
        return
    upload_folder(Path(local_path), Path(fs_path), _copied)


def upload_folder(local: Path, target: Path, copied: dict[str, tuple[int, int]]) -> None:
    """Copy the tree `local` into `target`, each file through `replace_file`; `copied` holds the
    (size, modification time) each target was copied at, and a source still so is skipped."""
    for root, _, names in os.walk(local):
        folder = target / os.path.relpath(root, local)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            source, dest = Path(root, name), folder / name
            try:
                copy_changed(source, dest, copied)
            except FileNotFoundError:
                if source.exists():
                    raise
                # removed while Tune copied it; the next copy follows


def copy_changed(source: Path, dest: Path, copied: dict[str, tuple[int, int]]) -> None:
    """Copy `source` to `dest` through `replace_file`, unless `copied` says `dest` was copied at
    `source`'s present size and modification time."""
    stat = source.stat()
    seen = (stat.st_size, stat.st_mtime_ns)
    key = str(dest)  # a str key: half a Path's memory, and the memo has an entry per file
    if copied.get(key) != seen or not dest.exists():
        replace_file(source, dest)
        copied[key] = seen


def copy_trial_files_now(trial: Any, names: Iterable[str]) -> None:
    """Copy files `names` of an ended trial from Tune's staging folder to its run folder now.

    Tune copies the staging folder at its experiment-state saves, in one pass that is not
    atomic: a driver killed just after a trial ended could leave the run folder's state saying
    the trial ended and its result.json one line short, and a resumed run does not run an ended
    trial again. Copied as it ends, an ended trial's files are whole before any state that says
    it ended. Only for a run folder on the local filesystem; cloud storage keeps Tune's pace."""
    import pyarrow.fs

    storage = getattr(trial, "storage", None)
    if (
        storage is None
        or not isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)
        or not trial.local_path
        or not trial.path
    ):
        return
    local, target = Path(trial.local_path), Path(trial.path)
    if local == target:
        return
    for name in names:
        if (local / name).exists():
            target.mkdir(parents=True, exist_ok=True)
            copy_changed(local / name, target / name, _copied)


def replace_file(source: Path, target: Path) -> None:
    """`target` becomes a copy of `source` at once, or stays as it was (no temporary left). The
    temporary file is the thread's own: Tune's copy thread and the driver's may copy one file at
    once, and a shared temporary could be renamed half-written."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.upload")
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
