"""Weights & Biases' side of a tracker: one W&B run per trial (its id the trial id), in one
group per experiment, written by the driver itself, and one more run per run of an experiment
(job type `summary`) with the spec, summary.json and each trial's final status.

Every run is made with the options' `dir`, so offline runs are all in `<dir>/wandb`, whole:
`run.finish` returns before wandb-core has written the run's file out (it only tells the core
the run is done), so an offline run is finished here only once its file holds the run's exit
record. Until then a trial's old folder could be removed while still being written, and the
tracker could stop with a run's file still empty on disk. A trial's run that must drop
values (the trial went back to an earlier iteration) is written again: offline, the earlier
folders of that run are removed first; online, W&B rewinds the run to the last iteration kept.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app.trackers import naming
from tune_app.trackers.mirror import Row, Target

if TYPE_CHECKING:
    from tune_app.rundir.records import RunSummary
    from tune_app.trackers.options import WandbOptions


# The longest a finished offline run's file is waited for: wandb-core writes it out within
# milliseconds; the bound keeps a stuck core from holding the tracker's worker for ever.
WRITTEN_S = 60.0

# A run file: LevelDB's log format (32 KiB blocks of 7-byte-headed chunks) after a 7-byte header.
_BLOCK = 32768


def records(data: bytes) -> Iterator[Any]:
    """The whole records of a run file's bytes, in order, each a protobuf `Record`; a chunk
    still being written ends them."""
    from wandb.proto.wandb_internal_pb2 import Record  # type: ignore[attr-defined]  # generated

    pos, part = 7, b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if left < 7 or kind == 0:  # a block's zero padding
            pos += left
            continue
        if pos + 7 + length > len(data):  # a chunk still being written
            return
        part += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last chunk of one
            record = Record()
            record.ParseFromString(part)
            yield record
            part = b""


def _exited(path: Path) -> bool:
    """Whether the run file at `path` holds the run's exit record (its last), whole."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return any(r.WhichOneof("record_type") == "exit" for r in records(data))


class WandbSink:
    name = "W&B"

    def __init__(self, options: WandbOptions, target: Target) -> None:
        self.options = options
        self.target = target
        # A relative `dir` is where the run was started from, as the docs' `wandb sync` assumes.
        self.dir = Path(options.dir).absolute() if options.dir else Path.cwd()
        self.runs: dict[str, Any] = {}  # trial id -> its live W&B run
        self.configs: dict[str, dict[str, Any]] = {}
        self.made: dict[str, int] = {}  # trial id -> runs this process made for it
        self.logged: dict[str, list[Row]] = {}  # offline: what the trial's run holds
        self.offline = options.mode == "offline"

    def connect(self) -> None:
        import wandb  # noqa: F401  # fails here, in the worker, when it cannot load

        self.dir.mkdir(parents=True, exist_ok=True)

    def _init(self, run_id: str, **extra: Any) -> Any:
        import wandb

        return wandb.init(
            project=self.options.project or self.target.experiment,
            entity=self.options.entity,
            group=self.options.group or self.target.experiment,
            tags=list(self.options.tags),
            mode=self.options.mode,
            dir=str(self.dir),
            id=run_id,
            reinit="create_new",
            settings=wandb.Settings(
                console="off",  # the driver's output is the app's, not the run's
                silent=True,
                x_disable_stats=True,
                x_disable_machine_info=True,
                disable_git=True,
                save_code=False,
            ),
            **extra,
        )

    def _finish(self, run: Any, exit_code: int | None = None) -> None:
        """Finish `run`; offline, return once wandb-core has written its file out."""
        path = Path(run.settings.sync_file)
        run.finish(exit_code=exit_code)
        if not self.offline:
            return
        deadline = time.monotonic() + WRITTEN_S
        while not _exited(path) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _folders(self, trial_id: str) -> list[Path]:
        """The trial's offline run folders: its id, or its id and a count (`_run`)."""
        found = (self.dir / "wandb").glob(f"offline-run-*-{trial_id}")
        again = (self.dir / "wandb").glob(f"offline-run-*-{trial_id}-*")
        return sorted({*found, *again})

    def _drop(self, trial_id: str) -> None:
        """Remove the trial's offline runs (renamed first, so a removal half done is no run)."""
        for folder in self._folders(trial_id):
            gone = folder.with_name(folder.name + ".replaced")
            folder.rename(gone)
            shutil.rmtree(gone, ignore_errors=True)

    def _run(self, trial_id: str) -> Any:
        """The trial's live run. Offline, a trial whose run this process already finished (a
        retry, a restore) gets one new run holding everything: W&B, given an id again in the
        same process, left that run's file empty. Online, the same id goes on (resume)."""
        run = self.runs.get(trial_id)
        if run is not None:
            return run
        config = self.configs.get(trial_id, {})
        run_id = trial_id
        made = self.made.get(trial_id, 0)
        if self.offline and made:
            self._drop(trial_id)
            run_id = f"{trial_id}-{made + 1}"
        run = self._init(
            run_id,
            name=naming.run_name(trial_id),
            resume="allow",
            allow_val_change=True,
            config={
                **self.target.naming.params(config),
                **self.target.naming.tags(trial_id, config),
            },
        )
        self.made[trial_id] = made + 1
        self.runs[trial_id] = run
        for row in self.logged.get(trial_id, []):
            run.log(row.metrics, step=row.iteration)
        return run

    def open(self, trial_id: str, config: dict[str, Any]) -> list[int]:
        self.configs[trial_id] = config
        if self.offline:
            # What a run in another process wrote offline cannot be read back here: it is
            # written again from results.jsonl, its old folders removed.
            self._drop(trial_id)
            self._run(trial_id)
            return []
        run = self._run(trial_id)
        # Online, a resumed run goes on after the last step W&B holds: the iterations before it.
        return list(range(1, int(getattr(run, "starting_step", 0) or 0)))

    def log(self, trial_id: str, rows: list[Row]) -> None:
        run = self._run(trial_id)
        for row in rows:
            run.log(row.metrics, step=row.iteration)
        if self.offline:
            self.logged.setdefault(trial_id, []).extend(rows)

    def restart(self, trial_id: str, config: dict[str, Any], rows: list[Row]) -> None:
        self.configs[trial_id] = config
        run = self.runs.pop(trial_id, None)
        if run is not None:
            self._finish(run)  # offline, its folder is removed next: written out first
        if self.offline:
            self.logged[trial_id] = []  # `_run` makes a new run, the old ones removed
        else:  # W&B's rewind: the run as it was at the last iteration kept
            kept = rows[-1].iteration if rows else 0
            self.runs[trial_id] = self._init(trial_id, resume_from=f"{trial_id}?_step={kept}")
        self.log(trial_id, rows)

    def close(self, trial_id: str, failed: bool, local_path: str | None) -> None:
        run = self.runs.pop(trial_id, None)
        if run is not None:
            self._finish(run, exit_code=1 if failed else 0)

    def finish(self, summary: RunSummary) -> None:
        """One more run in the group, named after the experiment: the spec and summary.json as
        an artifact, and each trial's final status under its trial id."""
        import wandb

        key = hashlib.sha1(self.target.key.encode()).hexdigest()[:12]
        run = self._init(
            "summary-" + key,  # one summary run per run of the experiment, however resumed
            name=self.target.experiment,
            resume="allow",
            job_type="summary",
            config={naming.PARENT_TAG: self.target.key},
        )
        try:
            artifact = wandb.Artifact(f"{self.target.experiment}-summary", type="tune_app-summary")
            for path in (self.target.spec, self.target.summary):
                if path.exists():
                    artifact.add_file(str(path))
            run.log_artifact(artifact)
            run.summary.update({t.trial_id: naming.status(t) for t in summary.trials})
        finally:
            self._finish(run)

    def shutdown(self) -> None:
        for run in list(self.runs.values()):
            self._finish(run)
        self.runs.clear()
