"""Results on cloud storage (`s3://bucket/prefix`, any URI pyarrow opens).

Tune writes trial folders, checkpoints and its experiment state to the URI itself. The app's own
files (run.json, spec.yaml, results.jsonl, finished.jsonl, summary.json) are written in a local
staging folder and mirrored to the URI every few seconds and at the end. The staging folder is
the writer's: `resume` pulls the files back into it once it holds the folder's lease, while
`analyze`, `report` and `best` read a private copy (a live run on this machine may be writing
the staging folder). Credentials and endpoint come from the usual environment variables
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from tune_app.errors import SpecError, error_line
from tune_app.rundir.allowed import LOCAL_SCHEMES, local_uri_problem
from tune_app.rundir.finding import newest_of_each, not_run_why, run_number
from tune_app.rundir.layout import (
    CLONES_FILE,
    FINISHED_FILE,
    OPTUNA_DB,
    OPTUNA_JOURNAL,
    RESULTS_FILE,
    RUN_FILE,
    SPEC_FILE,
    SUMMARY_FILE,
)

# The app's files of a run folder, mirrored to cloud storage (Optuna's study with them: a resume
# pulls them into a fresh staging folder).
APP_FILES = (
    RUN_FILE,
    SPEC_FILE,
    RESULTS_FILE,
    FINISHED_FILE,
    SUMMARY_FILE,
    CLONES_FILE,
    OPTUNA_JOURNAL,
    OPTUNA_DB,
)
STAGING = "~/.cache/tune_app/staging"  # TUNE_APP_STAGING overrides
# The longest the first contact with cloud storage may take: a slow login takes seconds, while
# with no network GCS's client retries for many minutes, blocked in C where no signal reaches it.
REACH_S = 60.0
# The schemes of the cloud storage pyarrow opens: one followed by a single slash or none
# (`s3:/b/x`) is a mistyped URI, never a local folder named `s3:`.
CLOUD_SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")


def is_uri(path: str | Path) -> bool:
    """A cloud URI (scheme://...), not a local path (`file://` and `local://` are local)."""
    scheme, sep, _ = str(path).partition("://")
    return bool(sep) and scheme.lower() not in LOCAL_SCHEMES


def local_path(path: str | Path) -> str:
    """`path` as a local path: a `file:` or `local:` URI's path (`file:/a` and `file:///a` are
    /a, as `allowed.local_store` reads them; `file://` is empty), anything else as given (a
    local URI naming a host too: `local_uri_problem` refuses it)."""
    text = str(path)
    parsed = urlparse(text)
    if parsed.scheme.lower() in LOCAL_SCHEMES and local_uri_problem(text) is None:
        return unquote(parsed.path)
    return text


def unreachable(uri: str) -> str | None:
    """Why the cloud storage at `uri` cannot be used (a slash is missing, it names no bucket, or
    it cannot be opened or does not answer within REACH_S), or None, also for a local path. The
    first contact with a URI, made where it is first read; the main thread waits, so Ctrl-C and
    SIGTERM end the wait."""
    if problem := _mistyped(uri):
        return problem
    if not is_uri(uri):
        return None
    parsed = urlparse(uri)
    if not parsed.netloc and parsed.scheme != "hdfs":  # hdfs:///path: the default namenode
        return f"{uri} names no bucket: give {uri.partition(':')[0]}://bucket/prefix"
    said: list[str | None] = []
    contact = threading.Thread(target=lambda: said.append(_contact(uri)), daemon=True)
    contact.start()
    contact.join(REACH_S)
    if contact.is_alive():
        return f"cannot reach storage {uri}: no answer in {REACH_S:g} s (network, credentials?)"
    return said[0]


def _mistyped(uri: str) -> str | None:
    """Why `uri` is a URI with a slash missing, not a local path: a cloud scheme followed by
    one slash or none, any other scheme by one (`./x:/y` still names a local folder `x:`)."""
    scheme = urlparse(uri).scheme  # lowercased; a drive letter is no scheme
    rest = uri[len(scheme) + 1 :]
    slashes = len(rest) - len(rest.lstrip("/"))
    if len(scheme) < 2 or scheme in LOCAL_SCHEMES or slashes > 1:
        return None
    if slashes == 0 and scheme not in CLOUD_SCHEMES:
        return None  # `runs:v2` is a local folder's name
    return f"{uri} is not a URI: did you mean {uri[: len(scheme)]}://{rest.lstrip('/')}?"


def _contact(uri: str) -> str | None:
    """Why opening the storage at `uri` and asking it for its folder failed, or None."""
    try:
        fs, path = _fs(uri)
        fs.get_file_info(path)
    except SpecError as err:
        return err.what
    except Exception as err:  # any client's error: raised in `unreachable`'s thread, it is lost
        return f"cannot reach storage {uri}: {error_line(err)}"
    return None


def staging_dir(uri: str) -> Path:
    """The local folder holding the app's files of the experiment at `uri`."""
    root = Path(os.environ.get("TUNE_APP_STAGING", STAGING)).expanduser()
    digest = hashlib.sha1(uri.encode()).hexdigest()[:12]
    return root / f"{uri.rstrip('/').rsplit('/', 1)[-1]}-{digest}"


def reading_dir(uri: str) -> Path:
    """A folder of this process's own for reading the experiment at `uri`, removed at exit; the
    same one for every read of it (each `pull` replaces it), so a process that reads a run
    again and again keeps one copy."""
    return _reading_root() / staging_dir(uri).name


@functools.cache
def _reading_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="tune_app-read-"))
    atexit.register(shutil.rmtree, root, True)
    return root


def _fs(uri: str) -> tuple[Any, str]:
    import pyarrow.fs

    try:
        return pyarrow.fs.FileSystem.from_uri(uri.rstrip("/"))
    except (pyarrow.ArrowInvalid, OSError) as err:
        raise SpecError(f"cannot open storage {uri}: {error_line(err)}") from None


def has_file(uri: str, name: str) -> bool:
    import pyarrow.fs

    fs, path = _fs(uri)
    return fs.get_file_info(f"{path}/{name}").type == pyarrow.fs.FileType.File


def find_runs(
    uri: str, *, every: bool = False, prefer: Callable[[str], bool] | None = None
) -> tuple[list[str], list[str]]:
    """The runs `uri` names and the other runs of their experiments, as `finding.find_runs`
    tells them apart: a run's folder names its experiment's newest run, a run's run.json that
    run, a folder holding experiments the newest run of each."""
    import pyarrow.fs

    uri = uri.rstrip("/")
    if uri.endswith(f"/{RUN_FILE}") and has_file(uri.rsplit("/", 1)[0], RUN_FILE):
        return [uri.rsplit("/", 1)[0]], []
    fs, path = _fs(uri)

    def runs_in(parent: str, names: Callable[[str], bool]) -> dict[str, str]:
        _, where = _fs(parent)
        try:
            entries = fs.get_file_info(pyarrow.fs.FileSelector(where, allow_not_found=True))
        except OSError as err:
            raise SpecError(f"cannot list {parent}: {err}") from None
        return {
            e.base_name: _experiment_of(f"{parent}/{e.base_name}", e.base_name)
            for e in entries
            if e.type == pyarrow.fs.FileType.Directory
            and names(e.base_name)
            and has_file(f"{parent}/{e.base_name}", RUN_FILE)
        }

    def chosen(parent: str, found: dict[str, str]) -> dict[str, list[str]]:
        keep = None if prefer is None else (lambda name: prefer(f"{parent}/{name}"))
        return newest_of_each(found, keep)

    if has_file(uri, RUN_FILE):
        parent, name = uri.rsplit("/", 1)
        experiment = _experiment_of(uri, name)
        base = experiment if run_number(name, experiment) is not None else name
        family = {
            n: e
            for n, e in runs_in(parent, lambda n: run_number(n, base) is not None).items()
            if e == experiment
        }
        family[name] = experiment
        for newest, others in chosen(parent, family).items():
            if name in (newest, *others):
                return [f"{parent}/{newest}"], [f"{parent}/{o}" for o in others]
    found = runs_in(uri, lambda n: True)
    if not found:
        raise SpecError(
            f"{uri} holds no tune_app run (no {RUN_FILE} in it or one level below)",
            suggestion="give an experiment folder, e.g. s3://bucket/prefix/<experiment>",
        )
    if every:
        return sorted(f"{uri}/{n}" for n in found), []
    latest = chosen(uri, found)
    others = sorted(f"{uri}/{o}" for olds in latest.values() for o in olds)
    return sorted(f"{uri}/{n}" for n in latest), others


def _experiment_of(uri: str, name: str) -> str:
    """The experiment the run.json at `uri` names (the folder's name when it names none)."""
    try:
        data = json.loads(read_text(uri, RUN_FILE) or "")
    except ValueError:
        data = None
    found = data.get("experiment") if isinstance(data, dict) else None
    return found if isinstance(found, str) and found else name


def unfinished(uri: str) -> bool:
    """Whether the run at `uri` left trials unfinished (or never wrote its summary)."""
    try:
        data = json.loads(read_text(uri, SUMMARY_FILE) or "")
    except ValueError:
        return True
    return not isinstance(data, dict) or bool(data.get("interrupted", True))


def not_run(uri: str) -> str | None:
    """Why the run at `uri` ran no trials to read, or None (`finding.not_run_why`)."""
    import pyarrow.fs

    fs, path = _fs(uri)
    reported = any(
        (info := fs.get_file_info(f"{path}/{name}")).type == pyarrow.fs.FileType.File and info.size
        for name in (RESULTS_FILE, FINISHED_FILE)
    )
    return not_run_why(read_text(uri, SUMMARY_FILE), reported)


def ran_trials(uri: str) -> bool:
    return not_run(uri) is None


def read_text(uri: str, name: str) -> str | None:
    """The text of file `name` at `uri`, or None when there is none."""
    fs, path = _fs(uri)
    try:
        with fs.open_input_stream(f"{path}/{name}") as f:
            return bytes(f.read()).decode("utf-8", errors="replace")
    except OSError:  # FileNotFoundError among them
        return None


def write_text(uri: str, name: str, text: str) -> None:
    fs, path = _fs(uri)
    fs.create_dir(path, recursive=True)
    with fs.open_output_stream(f"{path}/{name}") as out:
        out.write(text.encode("utf-8"))


def delete(uri: str, name: str) -> None:
    fs, path = _fs(uri)
    fs.delete_file(f"{path}/{name}")


def push(local: Path, uri: str, names: tuple[str, ...] = APP_FILES) -> None:
    """Upload the app's files (those that exist) from `local` to `uri`."""
    fs, path = _fs(uri)
    fs.create_dir(path, recursive=True)
    for name in names:
        source = local / name
        if source.is_file():
            with fs.open_output_stream(f"{path}/{name}") as out:
                out.write(source.read_bytes())


def push_state(local: Path, uri: str) -> None:
    """Upload Tune's experiment state files, after the app patched them."""
    push(local, uri, tuple(p.name for p in local.glob("experiment_state-*.json")))


def pull(uri: str, local: Path) -> Path:
    """Download the top-level files of the experiment at `uri` (the app's and Tune's state, not
    the trial folders) into `local`, replacing what was there; returns `local`."""
    shutil.rmtree(local, ignore_errors=True)
    local.mkdir(parents=True)
    _download(uri, local, lambda name: True)
    return local


def pull_state(uri: str, local: Path) -> None:
    """Download Tune's experiment state files into `local` (to read trial statuses)."""
    for p in local.glob("experiment_state-*.json"):
        p.unlink()
    _download(
        uri, local, lambda name: name.startswith("experiment_state-") and name.endswith(".json")
    )


def _download(uri: str, local: Path, wanted: Callable[[str], bool]) -> None:
    """Copy the top-level files at `uri` whose names are `wanted` into `local`."""
    import pyarrow.fs

    fs, path = _fs(uri)
    for entry in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)):
        if entry.type == pyarrow.fs.FileType.File and wanted(entry.base_name):
            with fs.open_input_stream(entry.path) as f:
                (local / entry.base_name).write_bytes(f.read())
