"""How the app reads and writes a file of its own: whole or not at all (a temporary file and a
rename, lines appended whole and a torn last one cut), never through a link planted where it
writes or reads, and never from a pipe or a device (a run folder received from someone).
Ray-free; the files a run folder holds are `tune_app.rundir.layout`'s.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tune_app.errors import WriteError


def jsonable(value: Any) -> Any:
    """`value` as strict JSON: numpy scalars unwrapped, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    return str(value)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically: a reader never sees half a file, even if the run dies mid-write."""
    write_text(path, json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")


def nofollow(path: str, flags: int) -> int:
    """`open`'s opener for the app's own files: a link at the path is refused (OSError), not
    followed, so the app writes the files it names, never what a link planted in a folder (a
    run folder received from someone, a report's folder) points to."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)


def open_regular(path: Path, mode: str = "rb", *, links: bool = False, **options: Any) -> IO[Any]:
    """`path` open for reading, if it is a regular file; OSError if not: a pipe or a device in
    a run folder received from someone would block the reader, or never end, and a link there
    would show what it points to (`/etc/passwd` as a trial's error). `links`: a link at `path`
    is followed (a file the user names: a spec)."""
    nofollow = 0 if links else getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | nofollow)
    except OSError as err:
        if err.errno == errno.ELOOP and not links:
            raise OSError(errno.ELOOP, "a link, not followed", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return open(fd, mode, **options)  # noqa: SIM115 - the caller closes it


def read_text(path: Path, errors: str = "strict") -> str:
    """The text of a run's file (UTF-8), read only where it is a regular file (`open_regular`);
    UnicodeDecodeError (a ValueError) where it is no UTF-8 and `errors` is strict."""
    with open_regular(path, "r", encoding="utf-8", errors=errors) as f:
        return str(f.read())


def read_json(path: Path) -> Any:
    """The JSON value of a run's file; OSError where it cannot be read (`open_regular`),
    ValueError where it is no JSON (not UTF-8, nested too deep for the parser)."""
    with open_regular(path) as f:
        data = f.read()
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def staged(path: Path) -> Path:
    """A hidden temporary name beside `path` that no other writer takes (two reports of one run
    at once) and no file received in the folder holds: made by this writer with `new_file` or
    `mkdir`, which refuse to open what stands there (a link planted in the folder)."""
    name = path.name.encode()[:200].decode(errors="ignore")  # within a name's 255 bytes
    return path.with_name(f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def new_file(path: Path) -> io.FileIO:
    """A file made at `path` by this call, open for writing (unbuffered)."""
    return open(path, "xb", buffering=0, opener=nofollow)  # noqa: SIM115 - the caller closes it


def open_append(path: Path) -> io.FileIO:
    """`path` open for appending (created if missing), unbuffered; a link there is refused
    (OSError), not appended through."""
    return open(path, "ab", buffering=0, opener=nofollow)  # noqa: SIM115 - the caller closes it


def write_text(path: Path, text: str) -> None:
    """Write a file atomically, through a temporary file beside it and a rename; a write that
    fails (a full disk) leaves the file as it was and no temporary file. A link at `path` is
    replaced by the file, not written through."""
    tmp = staged(path)
    try:
        with new_file(tmp) as f:
            write_all(f, text.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename in (None, str(tmp)):
            err.filename, err.filename2 = str(path), None  # the file meant, not the temporary
        raise


def replace_folder(new: Path, path: Path) -> None:
    """Put the folder `new` (written whole beside `path`) in the place of `path`, renamed: a
    reader sees the old folder or the new one, never half of either."""
    old = staged(path)
    if os.path.lexists(path):  # a link there is moved aside, not followed
        os.replace(path, old)
    os.replace(new, path)
    remove(old)


def remove(path: Path) -> None:
    """Remove what stands at `path`: a link or a file unlinked, a folder with what it holds."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def for_the_user() -> Iterator[None]:
    """Writing a file for the user (a report, an exported spec, a JUnit file): an OSError
    becomes WriteError, one line and exit 74. The writes inside are atomic (`write_text`,
    `replace_folder`), so a failure leaves nothing half-written."""
    try:
        yield
    except OSError as err:
        raise WriteError(err) from None


def append_line(path: Path, row: dict[str, Any]) -> None:
    """Append `row` to a JSON-lines file as one line, after cutting a torn last line."""
    cut_torn_tail(path)
    with open_append(path) as f:
        write_all(f, (json.dumps(jsonable(row), allow_nan=False) + "\n").encode())


def write_all(file: io.FileIO, data: bytes) -> None:
    """Write `data` through an unbuffered file. A write that fails (a full disk) leaves at most a
    torn last line, which `cut_torn_tail` drops, and nothing buffered to land after it later."""
    view = memoryview(data)
    try:
        while view:
            view = view[file.write(view) :]
    except OSError as err:
        err.filename = err.filename or file.name  # a failed write() names no file
        raise


def cut_torn_tail(path: Path) -> None:
    """Drop a last line left half-written by a killed driver or a full disk, so the next record
    starts on a line of its own (appended to the torn one, both would be lost)."""
    if not os.path.lexists(path):
        return
    with open(path, "r+b", opener=nofollow) as f:  # a link there: refused, not cut through
        size = f.seek(0, 2)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        end = size  # back from the end a block at a time: the file may be gigabytes
        while end > 0:
            start = max(0, end - _BLOCK)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                f.truncate(start + at + 1)
                return
            end = start
        f.truncate(0)


_BLOCK = 1 << 16


def read_rows(data: bytes) -> list[dict[str, Any]]:
    """The JSON objects of whole lines; an unreadable line is skipped."""
    rows = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # the latter: nested deeper than the parser goes
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
