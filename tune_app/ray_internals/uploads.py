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
fits (`_FilesystemSyncer._sync_up_command` looks it up at each copy).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def whole_file_uploads() -> Iterator[None]:
    """While this holds, Tune's copies of a folder to a local run folder replace files whole."""
    import pyarrow.fs
    from ray.train._internal import storage

    original = storage._upload_to_fs_path
    copied: dict[Path, tuple[int, int]] = {}

    def upload(local_path: str, fs: Any, fs_path: str, exclude: list[str] | None = None) -> None:
        if exclude or not isinstance(fs, pyarrow.fs.LocalFileSystem) or os.path.isfile(local_path):
            original(local_path, fs, fs_path, exclude)
            return
        upload_folder(Path(local_path), Path(fs_path), copied)

    storage._upload_to_fs_path = upload
    try:
        yield
    finally:
        storage._upload_to_fs_path = original


def upload_folder(local: Path, target: Path, copied: dict[Path, tuple[int, int]]) -> None:
    """Copy the tree `local` into `target`, each file through `replace_file`; `copied` holds the
    (size, modification time) each target was copied at, and a source still so is skipped."""
    for root, _, names in os.walk(local):
        folder = target / os.path.relpath(root, local)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            source, dest = Path(root, name), folder / name
            try:
                stat = source.stat()
                seen = (stat.st_size, stat.st_mtime_ns)
                if copied.get(dest) != seen or not dest.exists():
                    replace_file(source, dest)
                    copied[dest] = seen
            except FileNotFoundError:
                if source.exists():
                    raise
                # removed while Tune copied it; the next copy follows


def replace_file(source: Path, target: Path) -> None:
    """`target` becomes a copy of `source` at once, or stays as it was (no temporary left)."""
    tmp = target.with_name(f".{target.name}.upload")
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
