"""What a spec may write where: the one place that decides it.

A spec names three kinds of place a run writes:
- files in a trial's folder (`log_to_file`): plain file names, never a path, so a trial's output
  stays in its folder (Tune joins the name to the trial's folder; an absolute name or `..` would
  leave it);
- the run folder's parent (`storage_path`, `--storage-path`);
- the local stores of the tools a run feeds (a tracker's folder, RLlib's recorded episodes),
  which live outside the run folder by design (one MLflow store serves many runs) and are named
  by the user.
A folder of the last two kinds is resolved (symlinks followed) and refused when it lies in the
system's own folders or cannot be written. `validate` asks this module, and `run` and `resume`
ask it again through the same plan before anything is written. The files a user names for a
command's output (a report's page, a JUnit file) are checked here too (`output_problem`), and
the folder a report's figures replace (`replaced_folder_problem`).
Ray-free and spec-free.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlparse

# Folders of the system, never a place for results: the kernel's (/proc, /sys, /dev), the
# system's configuration and programs. Refused by their resolved path, so a symlink to one is too.
SYSTEM_FOLDERS = tuple(
    Path(p)
    for p in (
        "/proc",
        "/sys",
        "/dev",
        "/boot",
        "/etc",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/usr",
        "/run",
        "/var/run",
        "/var/lib",
    )
)

# The characters no file name a spec gives may hold: a separator would make a path of it.
_SEPARATORS = ("/", "\\")

# URI schemes of the local disk (pyarrow's filesystems take both): their path is a local folder,
# checked as one (a system folder refused) and written as one.
LOCAL_SCHEMES = ("file", "local")

# What Tune and the app keep in each trial's folder (the rows of its results, its config, its
# failures, its TensorBoard events, its checkpoints): a trial's output written in their place
# would lose them, and the readers would read the output as them.
TRIAL_FILES = (
    "result.json",
    "progress.csv",
    "params.json",
    "params.pkl",
    "error.txt",
    "error.pkl",
)
TRIAL_FILE_PREFIXES = ("events.out.tfevents", "checkpoint_")


def file_name_problem(name: str) -> str | None:
    """Why `name` is not a plain file name for a trial's folder, or None."""
    if not name or not name.strip():
        return "is empty: give a file name"
    if unseen := _unseen(name):
        return f"holds {unseen}"
    if any(s in name for s in _SEPARATORS) or os.path.isabs(name):
        return f"{name!r} is a path: give a file name, kept in each trial's folder"
    if name in (".", ".."):
        return f"{name!r} names a folder, not a file"
    if len(name.encode()) > 255:
        return f"is {len(name.encode())} bytes long, over the 255 a file name may have"
    if name in TRIAL_FILES or name.startswith(TRIAL_FILE_PREFIXES):
        return f"{name!r} is a file Tune keeps in each trial's folder: give another name"
    return None


def home_problem(path: str) -> str | None:
    """Why `~user/...` names no folder here (no such user), or None."""
    try:
        Path(path).expanduser()
    except RuntimeError:
        return f"{path.split('/')[0]} names the home of a user this machine does not have"
    return None


def root_problem(storage_path: str) -> str | None:
    """Why a storage path is no place for runs: the file system's root itself (each run would
    be a top-level folder beside the system's), or None."""
    local = local_store(storage_path)
    if local is not None and not home_problem(str(local)):
        if Path(os.path.abspath(local.expanduser())) == Path("/"):
            return "/ is the root of the file system: name a folder in it for the results"
    return None


def _unseen(text: str) -> str | None:
    """The first character of `text` that does not show as itself, named: a control character
    (NUL, an escape that a terminal acts on, a line break) or a format one (a right-to-left
    override, a zero-width space), which make a path print as another."""
    for c in text:
        if unicodedata.category(c) in ("Cc", "Cf"):
            return "a NUL character" if c == "\0" else f"the character {ascii(c)}"
    return None


def system_folder(path: Path) -> Path | None:
    """The system folder `path` lies in (as written, or once its symlinks are resolved)."""
    for candidate in (Path(os.path.abspath(path)), path.resolve()):
        for system in SYSTEM_FOLDERS:
            if candidate == system or system in candidate.parents:
                return system
    return None


def folder_problem(folder: Path) -> str | None:
    """Why a run could not make and write local `folder` (a name no folder can have, a system
    folder, a file in the way, a read-only folder or filesystem), or None. Checked before
    anything runs."""
    if problem := _name_problem(folder):
        return problem
    folder = folder.expanduser()
    system = system_folder(folder)
    if system is not None:
        return f"{os.path.abspath(folder)} lies in {system}, a folder of the system"
    existing = Path(os.path.abspath(folder))
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable (read-only folder or filesystem)"
    return None


def _name_problem(folder: Path) -> str | None:
    """Why no folder can be made at `folder` as written, or None."""
    if unseen := _unseen(str(folder)):
        return f"holds {unseen}: name folders with characters that show as themselves"
    for blank in (part for part in folder.parts if not part.strip()):
        return f"{str(folder)!r} holds a folder named {blank!r}, blanks only: give a visible name"
    for var in (part for part in folder.parts if re.fullmatch(r"\$\{?\w+\}?", part)):
        return f"holds {var}, which is not expanded (nothing in a spec is): write the folder"
    for long in (part for part in folder.parts if len(part.encode()) > 255):
        return f"holds a folder name of {len(long.encode())} bytes, over the 255 a name may have"
    if len(os.path.abspath(folder).encode()) >= 4096:
        return "is a path over the 4,096 bytes the system takes"
    return home_problem(str(folder))


def output_problem(path: Path, suffixes: tuple[str, ...]) -> str | None:
    """Why a command should not write the output file a user named (a report's page, a JUnit
    file) at `path`, or None: a place of the system, something other than a file there (a link,
    a device: the rename that writes it whole would replace it), or a name not of its kind
    (`suffixes`), which could be a spec's or a run's own record that the page would replace."""
    if unseen := _unseen(str(path)):
        return f"holds {unseen}: name files with characters that show as themselves"
    system = system_folder(path)
    if system is not None:
        return f"{os.path.abspath(path)} lies in {system}, a folder of the system"
    if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
        return f"{path} is not a regular file (a link, a device or a folder): give a file's path"
    if path.suffix.lower() not in suffixes:
        return (
            f"{path.name!r} does not end in {' or '.join(suffixes)}: the file of that name there "
            "(a spec, a run's records) would be replaced"
        )
    return None


def replaced_folder_problem(folder: Path, marker: str) -> str | None:
    """Why a command should not replace `folder`, which it writes whole beside its output (a
    report's figures), or None: something stands there that the app did not write, and would be
    lost. A folder the app wrote holds its `marker` file; a link, a file or another folder does
    not."""
    if not os.path.lexists(folder) or (not folder.is_symlink() and (folder / marker).is_file()):
        return None
    return (
        f"{folder} is in the way of the page's figures: it was not written by the app (it holds "
        f"no {marker}), and would be replaced"
    )


def local_store(uri: str) -> Path | None:
    """The local folder a store's URI or path writes (a plain path, `file:`, SQLite's database
    file's folder), or None for a server or a cloud bucket."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme == "" or (len(scheme) == 1 and os.name == "nt"):
        return Path(uri)
    if scheme in LOCAL_SCHEMES:
        return Path(unquote(parsed.path) or ".")
    # sqlite:///relative.db, sqlite:////absolute.db, and through a driver: sqlite+pysqlite://
    if scheme.partition("+")[0] == "sqlite":
        database = uri.split(":///", 1)[1] if ":///" in uri else ""
        return Path(database).parent if database else None
    return None


def local_uri_problem(path: str | Path) -> str | None:
    """Why a `file://` or `local://` URI names no local folder (`file://results` reads
    `results` as a host, and its path as the disk's root), or None."""
    text = str(path)
    scheme, sep, _ = text.partition("://")
    host = urlparse(text).netloc if sep and scheme.lower() in LOCAL_SCHEMES else ""
    if host in ("", "localhost"):
        return None
    return (
        f"'{text}' names the host '{host}': a {scheme}:// URI's path follows three slashes "
        f"({scheme}:///absolute/path), or give the path itself"
    )


def store_problem(uri: str) -> str | None:
    """Why a tool's local store named by `uri` cannot be written, or None (also for a server)."""
    problem = local_uri_problem(uri)
    if problem is not None:
        return problem
    folder = local_store(uri)
    return None if folder is None else folder_problem(folder)
