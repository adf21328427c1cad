"""Where one experiment's run folder is, local or on cloud storage, and the files in it.

`RunLocation` is the one owner of that rule: how a spec's storage path and an experiment name
make a folder (a `smoke/` folder for --smoke runs, a local staging folder for a cloud URI), the
folder that holds it (Tune's storage_path), the app's files in it, whether it holds a run and
whether that run can be resumed, and mirroring to cloud storage. Nothing outside `rundir` builds
a path inside a run folder or splits a URI.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tune_app.errors import SpecError
from tune_app.rundir import allowed, finding, storage
from tune_app.rundir.layout import (
    CLONES_FILE,
    ERROR_FILE,
    FINISHED_FILE,
    OPTUNA_DB,
    OPTUNA_JOURNAL,
    RESULTS_FILE,
    RUN_FILE,
    SPEC_FILE,
    STDOUT_FILE,
    SUMMARY_FILE,
    TUNER_STATE,
)
from tune_app.rundir.storage import is_uri, staging_dir

SMOKE_FOLDER = "smoke"  # --smoke runs go to a folder of this name under the storage path


def given(where: str | Path) -> str | Path:
    """`where`, refused when empty (an unset shell variable), which Path reads as the working
    directory, or naming no place that answers (`storage.unreachable`)."""
    text = str(where)
    if not storage.local_path(text).strip():  # `file://` too
        raise SpecError("no run folder given (the path is empty)")
    if problem := (
        allowed.local_uri_problem(text) or allowed.home_problem(text) or storage.unreachable(text)
    ):
        raise SpecError(problem)
    return where


@dataclass(frozen=True)
class RunLocation:
    """An experiment's run folder: `local` holds the app's files (for cloud storage, the local
    staging folder), `uri` is the folder on cloud storage, if there."""

    local: Path
    uri: str | None = None

    @classmethod
    def for_experiment(cls, storage_path: str, name: str, *, smoke: bool = False) -> RunLocation:
        """The folder of experiment `name` under a spec's (or --storage-path's) storage path."""
        if is_uri(storage_path):
            uri = f"{storage_path.rstrip('/')}{'/' + SMOKE_FOLDER if smoke else ''}/{name}"
            return cls(staging_dir(uri), uri)
        given = Path(storage.local_path(storage_path))
        # `~user` of no user here stays as written: validate refuses it (`allowed`).
        home = given if allowed.home_problem(str(given)) else given.expanduser()
        root = home / (SMOKE_FOLDER if smoke else "")
        return cls(Path(os.path.abspath(root)) / name)  # `..` resolved, as the user reads it

    def unwritable(self) -> str | None:
        """Why this local folder could not be made and written (`allowed.folder_problem`: a
        system folder, a file in the way, a read-only folder), or None; checked before anything
        runs."""
        if self.uri:
            return None  # the staging folder is the app's own; the bucket answers at run
        return allowed.folder_problem(self.local)

    @staticmethod
    def open(
        where: str | Path, *, every: bool = False, resuming: bool = False
    ) -> list[RunLocation]:
        """The runs `where` names (`finding.find_runs`), the one way every reader (analyze,
        report, best, evaluate, tensorboard, the Python API) and `resume` find them: a run's
        folder, its experiment's newest run that ran trials (the newest unfinished one when
        `resuming`); a run's run.json, exactly that run; a folder of experiments, the newest run
        of each (every run with `every`). A path or a URI; cloud runs pulled into a copy to read
        (never their staging folders: those are the writer's, see `pull`). Where a name stood
        for several runs, one line on stderr says which was read and names the others."""
        if is_uri(given(where)):
            uris, others = storage.find_runs(
                str(where),
                every=every,
                prefer=storage.unfinished if resuming else storage.ran_trials,
            )
            found = [RunLocation(storage.pull(u, storage.reading_dir(u)), u) for u in uris]
            _say_passed_over(found, others, storage.not_run, resuming)
            return found
        paths, passed = finding.find_runs(
            Path(storage.local_path(where)),
            every=every,
            prefer=finding.unfinished if resuming else finding.ran_trials,
        )
        found = [RunLocation(p) for p in paths]
        _say_passed_over(
            found, [str(p) for p in passed], lambda p: finding.not_run(Path(p)), resuming
        )
        return found

    def fresh(self, claimed: Sequence[RunLocation] = ()) -> RunLocation:
        """The folder a new run of this experiment writes: this one if no run has written here,
        else the first `<name>_<n>` (n = 2, 3, ...) none has and none of `claimed` is. A re-run
        of a spec never writes into an earlier run's folder, finished or not; a folder left by
        a driver killed before Tune started holds nothing to keep and is taken."""
        n, candidate = 1, self
        while candidate._taken() or any(candidate.same_as(c) for c in claimed):
            n += 1
            candidate = self.numbered(n)
        return candidate

    @staticmethod
    def fresh_all(folders: Sequence[RunLocation]) -> list[RunLocation]:
        """The folders new runs of a spec's experiments write (`fresh`), none taking another's:
        experiment `x`, its folder kept, is not given `x_2` where a spec's experiment `x_2`
        writes."""
        out: list[RunLocation] = []
        for i, folder in enumerate(folders):
            others = [f for j, f in enumerate(folders) if j != i]
            out.append(folder.fresh([*others, *out]))
        return out

    def numbered(self, n: int) -> RunLocation:
        """The folder of this experiment's `n`th run (n >= 2) beside this one."""
        name = f"{self.name}_{n}"
        if self.uri:
            uri = f"{self.parent}/{name}"
            return RunLocation(staging_dir(uri), uri)
        return RunLocation(self.local.parent / name)

    def _taken(self) -> bool:
        if self.uri:
            return self.holds_remote_run() or storage.has_file(self.parent, self.lock_name)
        if self.lock_file.exists():  # a run holds it, or one just started there
            return True
        if not self.holds_files():
            return False
        return self.has_tune_state() or self.tune_started() or not self.holds_only_records()

    @property
    def lock_name(self) -> str:
        """The name of the lock (a lease on cloud storage) beside the folder."""
        return f".{self.name}.lock"

    @property
    def lock_file(self) -> Path:
        """The local lock file, beside the folder's real path: reached through a symlink (to
        the folder or any folder above it), a folder is the same folder, with the same lock."""
        real = self.local.expanduser().resolve()
        return real.parent / f".{real.name}.lock"

    # ---- names ----------------------------------------------------------------------------

    @property
    def where(self) -> str:
        """Where the results are, as a user names it (a folder or a URI)."""
        return self.uri or str(self.local)

    @property
    def name(self) -> str:
        """The experiment folder's own name."""
        return self.uri.rstrip("/").rsplit("/", 1)[-1] if self.uri else self.local.name

    @property
    def tune_where(self) -> str:
        """Where Tune finds the run (`Tuner.restore`): the URI, or the local folder's absolute
        path (Tune's pyarrow file system refuses a relative one: "URI has empty scheme")."""
        return self.uri or str(self.local.expanduser().absolute())

    @property
    def parent(self) -> str:
        """The folder (or URI) that holds it: Tune's storage_path."""
        return self.uri.rstrip("/").rsplit("/", 1)[0] if self.uri else str(self.local.parent)

    def storage_path(self, smoke: bool) -> str:
        """The storage path `for_experiment` made this from (above `smoke/` for a smoke run)."""
        if not smoke:
            return self.parent
        return self.parent.rsplit("/", 1)[0] if self.uri else str(Path(self.parent).parent)

    def same_as(self, other: RunLocation) -> bool:
        """The same folder, however each was spelt (relative or resolved, trailing slash)."""
        return _canonical(self) == _canonical(other)

    # ---- the app's files ------------------------------------------------------------------

    @property
    def results(self) -> Path:
        return self.local / RESULTS_FILE

    @property
    def summary(self) -> Path:
        return self.local / SUMMARY_FILE

    @property
    def record(self) -> Path:
        """run.json: how the run was run (`RunRecord`)."""
        return self.local / RUN_FILE

    @property
    def record_where(self) -> str:
        """run.json as a user names it (a path or a URI): what reads exactly this run."""
        return f"{self.where.rstrip('/')}/{RUN_FILE}"

    def named_by(self, where: str | Path) -> bool:
        """Whether `where` names this run itself (its folder or its run.json), not a folder
        whose newest run it is."""
        text = str(where).rstrip("/")
        text = text[: -len(RUN_FILE)].rstrip("/") if text.endswith("/" + RUN_FILE) else text
        if self.uri is not None:
            return text == self.uri.rstrip("/")
        return Path(text).resolve() == self.local.resolve()

    @property
    def spec(self) -> Path:
        """The spec as run."""
        return self.local / SPEC_FILE

    @property
    def clones(self) -> Path:
        return self.local / CLONES_FILE

    @property
    def finished(self) -> Path:
        return self.local / FINISHED_FILE

    @property
    def optuna_journal(self) -> Path:
        return self.local / OPTUNA_JOURNAL

    @property
    def optuna_db(self) -> Path:
        """The Optuna study of a run begun before the journal (SQLite), which its resume goes
        on with."""
        return self.local / OPTUNA_DB

    def trial_file(self, trial_folder: str, name: str) -> str:
        """A file of a trial as a user names it (a path or a URI): `name` in `trial_folder`."""
        return f"{self.where.rstrip('/')}/{trial_folder}/{name}"

    def failed_trial_files(
        self, log_to_file: bool | str | tuple[str, str]
    ) -> tuple[str, tuple[str, ...]]:
        """The run folder as a user names it, and the names of the files a failed trial's folder
        holds to read: its error file, then its stdout's where kept."""
        output = self.output_name(log_to_file)
        return self.where.rstrip("/"), (ERROR_FILE, *([output] if output else []))

    @staticmethod
    def output_name(log_to_file: bool | str | tuple[str, str]) -> str | None:
        """The name of the file a trial's stdout is kept in under Tune's `log_to_file` (true:
        `stdout`; one name for both; [stdout, stderr]), or None where it is not kept."""
        if log_to_file is False:
            return None
        if log_to_file is True:
            return STDOUT_FILE
        return log_to_file if isinstance(log_to_file, str) else log_to_file[0]

    @property
    def summary_where(self) -> str:
        """summary.json as a user names it (a path or a URI)."""
        return f"{self.where.rstrip('/')}/{SUMMARY_FILE}"

    # ---- what it holds --------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether a run may have written here (a cloud folder cannot be told without a look)."""
        return self.uri is not None or self.local.exists()

    def holds_files(self) -> bool:
        """Whether the local folder exists and is not empty."""
        return self.local.is_dir() and any(self.local.iterdir())

    def holds_remote_run(self) -> bool:
        """Whether the cloud folder holds a run's record (False for a local folder)."""
        return self.uri is not None and storage.has_file(self.uri, RUN_FILE)

    def has_tune_state(self) -> bool:
        """Whether Tune saved its state here (`tuner.pkl`): the run can be resumed."""
        return (self.local / TUNER_STATE).exists()

    def tune_started(self) -> bool:
        """Whether Tune got as far as saving its state or a trial reported."""
        saved = any(self.local.glob("experiment_state-*.json"))
        return saved or (self.results.exists() and self.results.stat().st_size > 0)

    def holds_results(self) -> bool:
        """Whether a trial reported or ended here, or the run wrote its summary."""
        return self.summary.exists() or any(
            p.exists() and p.stat().st_size > 0 for p in (self.results, self.finished)
        )

    def holds_only_records(self) -> bool:
        """Whether the folder holds nothing but what the app writes before Tune starts."""
        return {p.name for p in self.local.iterdir()} <= {RUN_FILE, SPEC_FILE}

    # ---- writing and mirroring ------------------------------------------------------------

    def create(self) -> None:
        """Make the local folder for a new run (a staging folder is emptied first: whatever an
        older run left there is stale; an empty folder made beforehand is used as it is).
        FileExistsError if a local run folder exists."""
        if self.uri:
            shutil.rmtree(self.local, ignore_errors=True)
        if self.local.is_dir() and not self.holds_files():
            return  # an empty folder (or a symlink to one) made beforehand: `fresh` took it
        self.local.mkdir(parents=True, exist_ok=False)

    def remove(self) -> None:
        shutil.rmtree(self.local, ignore_errors=True)

    def push(self) -> None:
        """Mirror the app's files to the cloud folder (nothing for a local one)."""
        if self.uri:
            storage.push(self.local, self.uri)

    def push_state(self) -> None:
        if self.uri:
            storage.push_state(self.local, self.uri)

    def pull(self) -> None:
        """Bring the cloud folder's app files into the staging folder, replacing what is there:
        for a resume, once it holds the folder's lease (a run writing there holds it)."""
        if self.uri:
            storage.pull(self.uri, self.local)

    def pull_state(self) -> None:
        if self.uri:
            storage.pull_state(self.uri, self.local)


def _say_passed_over(
    read: list[RunLocation], others: list[str], not_run: Callable[[str], str | None], resuming: bool
) -> None:
    """One line naming the run read and the runs not read (why, for one that ran no trials),
    and how to read one of them."""
    if not others:
        return
    why = {o: not_run(o) for o in others} if not resuming else {}
    kind = "the newest run"
    if resuming:  # the newest unfinished one where there is one
        stopped = all(finding.unfinished(r.local) for r in read)
        kind = "the newest unfinished run" if stopped else "the newest run (none is unfinished)"
    if any(why.values()):
        kind = "the newest run that ran trials"
    also = ", ".join(o + (f" ({why[o]})" if why.get(o) else "") for o in others)
    print(
        f"tune_app: reading {', '.join(r.where for r in read)}, {kind}; also there: {also} "
        f"(give a run's {RUN_FILE}, e.g. {others[-1].rstrip('/')}/{RUN_FILE}, to read exactly "
        "that run)",
        file=sys.stderr,
        flush=True,
    )


def _canonical(location: RunLocation) -> str:
    return location.uri.rstrip("/") if location.uri else str(location.local.resolve())


def parent_of(where: str) -> str:
    """The folder (or URI) holding a folder path or URI a user gave."""
    return where.rstrip("/").rsplit("/", 1)[0]


def resumed_together(folders: Sequence[str]) -> str | None:
    """The local folder holding all of `folders` (run folders, as `where` names them) whose
    `resume` continues exactly their runs, or None: they lie apart, on cloud storage (not listed
    at an interrupt), or beside runs that `resume` would take too (another spec's, which it
    refuses, or another experiment's)."""
    parents = {parent_of(f) for f in folders}
    if len(parents) != 1 or any(is_uri(f) for f in folders):
        return None
    parent = parents.pop()
    try:
        found, _ = finding.find_runs(Path(parent), prefer=finding.unfinished)
    except SpecError:
        return None
    return parent if {p.resolve() for p in found} == {Path(f).resolve() for f in folders} else None


def name_of(where: str) -> str:
    """The last part of a folder path or URI a user gave (a page's title)."""
    return where.rstrip("/").rsplit("/", 1)[-1] or where
