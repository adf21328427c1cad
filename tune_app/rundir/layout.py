"""The files of a run folder, and Ray-free ways to read and write them.

A run's experiment folder holds `run.json` (how it was run), `spec.yaml` (the spec as run),
`results.jsonl` (every result), `finished.jsonl` (trials as they ended), `summary.json` (after
the run) and Tune's own state and trial folders. `analyze` reads them without importing Ray.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from tune_app.rundir.files import nofollow, open_regular, read_rows, read_text
from tune_app.rundir.records import TrialEnd, record

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"
FINISHED_FILE = "finished.jsonl"
SPEC_FILE = "spec.yaml"
CLONES_FILE = "clones.jsonl"  # PBT and PB2: who copied whom, when, what changed
OPTUNA_JOURNAL = "optuna_journal.log"  # optuna's study (`optuna-dashboard DIR/optuna_journal.log`)
OPTUNA_DB = "optuna.db"  # the study of a run begun before the journal
TUNER_STATE = "tuner.pkl"  # Tune's saved Tuner: the run can be resumed
TUNE_STATES = "experiment_state-*.json"  # Tune's experiment state, a file per (re)start
# In each trial's folder: Tune's record of its failures, and its output (Tune's log_to_file=True)
ERROR_FILE = "error.txt"
STDOUT_FILE = "stdout"
# Tune's per-trial logs (its JSON and CSV logger callbacks), appended to, one line per result.
TUNE_RESULT_FILE = "result.json"
TUNE_PROGRESS_FILE = "progress.csv"
# What Tune writes of a trial on the driver and copies to the run folder at its state saves.
TUNE_TRIAL_LOGS = (TUNE_RESULT_FILE, TUNE_PROGRESS_FILE, ERROR_FILE)
STDERR_FILE = "stderr"
# A trial's checkpoints: folders `checkpoint_000003`, numbered in the order Tune took them.
_CHECKPOINT = re.compile(r"checkpoint_(\d+)")

# Tune names a trial's folder `<trainable>_<id>_<index>_<params>_<date>`: the id is `abcde_00001`
# from the variant generator, eight hex digits (`1a2b3c4d`) from a searcher such as hyperopt's.
_TRIAL_ID = re.compile(r"(?:^|_)([0-9a-f]{5}_\d{5}|[0-9a-f]{8})_\d+(?:_|$)")


def trial_id_of(folder_name: str) -> str | None:
    """The trial id in a Tune trial folder's name, if it is one."""
    found = _TRIAL_ID.search(folder_name)
    return found.group(1) if found else None


def checkpoints(trial_folder: Path) -> list[Path]:
    """A trial's checkpoint folders that Tune kept, oldest first."""
    if not trial_folder.is_dir():
        return []
    found = [
        (int(m.group(1)), path)
        for path in trial_folder.iterdir()
        if (m := _CHECKPOINT.fullmatch(path.name)) and path.is_dir()
    ]
    return [path for _, path in sorted(found)]


def latest_results(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """results.jsonl's rows as its writer means them: a row is identified by (trial,
    training_iteration), and a row for an iteration its trial already has replaces that trial's
    rows from that iteration on (a trial restored from an older checkpoint, by a resume, a retry
    or a PBT exploit, reports them again). Each (trial, iteration) is there once, the last
    written winning; files written before the writer kept to this read the same."""
    kept: list[dict[str, Any] | None] = []
    timeline: dict[Any, list[tuple[int, int]]] = {}  # trial -> (its row's index, iteration)
    for row in rows:
        step = row.get("training_iteration")
        if isinstance(step, int):
            own = timeline.setdefault(row.get("trial_id"), [])
            while own and own[-1][1] >= step:
                kept[own.pop()[0]] = None
            own.append((len(kept), step))
        kept.append(row)
    return [row for row in kept if row is not None]


def clone_key(event: dict[str, Any]) -> tuple[Any, Any]:
    """Where a clone happened in clones.jsonl: the trial that copied, and its iteration when it
    did. A trial restored to before an exploit and deciding it again logs the same key; so does
    a trial that exploits twice at one iteration (moved onto a donor's checkpoint from that
    iteration or before, it reaches the iteration again)."""
    return event.get("trial_id"), event.get("iteration")


def decided_again(later: dict[str, Any], earlier: dict[str, Any]) -> bool:
    """Whether exploit `later`, at `earlier`'s `clone_key`, is `earlier` decided again from the
    same state (a trial restored to before it: a resume's replay) rather than a second exploit
    at that iteration: both started from the same values of a key they changed, or `earlier`
    changed nothing (then nothing tells the two apart, and the record that said nothing goes).
    A second exploit starts from the values the first set, or from a later exploit's."""
    before, after = later.get("changed") or {}, earlier.get("changed") or {}
    if not after:
        return True
    shared = before.keys() & after.keys()
    return bool(shared) and all(before[k][0] == after[k][0] for k in shared)


def latest_clones(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """clones.jsonl's records as they stand in the trials' timelines, in the order logged: a
    record that is its trial's previous record `decided_again` replaces that record (files written
    before the writer kept to this hold both); exploits one after another at one iteration stay."""
    kept: list[dict[str, Any] | None] = []
    last: dict[Any, int] = {}  # trial id -> index in kept of its latest record
    for event in events:
        trial_id = event.get("trial_id")
        if trial_id in last:
            earlier = kept[last[trial_id]]
            if earlier and clone_key(earlier) == clone_key(event) and decided_again(event, earlier):
                kept[last[trial_id]] = None
        last[trial_id] = len(kept)
        kept.append(event)
    return [e for e in kept if e is not None]


def newest_state(folder: Path) -> Path | None:
    """Tune's newest experiment state file in a run folder, if any."""
    # One file per (re)start of the run, named by its start time; Tune touches them all at the end,
    # so the name, not the modification time, says which is newest.
    states = sorted(Path(folder).glob(TUNE_STATES))
    return states[-1] if states else None


def read_newest_state(folder: Path) -> tuple[Path, dict[str, Any]] | None:
    """Tune's newest experiment state file and its contents; None where there is none, or it
    cannot be read: Tune writes it in place (`TuneController.save_to_dir`), not atomically, so
    a process killed or a copy cut short mid-write leaves it empty or torn."""
    state = newest_state(folder)
    if state is None:
        return None
    try:
        data = json.loads(read_text(state))
    except (OSError, ValueError):
        return None
    return (state, data) if isinstance(data, dict) else None


def newest_trial_entries(folder: Path) -> Iterator[Any]:
    """The items of "trial_data" in Tune's newest experiment state (a trial's JSON and its
    metadata's, as two strings), read and decoded one at a time: the state parsed whole holds
    its text and every trial's text again (10 KB a trial), which after a search of thousands
    was the driver's peak. Nothing where there is no state. OSError or ValueError where it
    cannot be read or is torn, which may come after items: a caller keeps none."""
    state = newest_state(folder)
    if state is None:
        return
    with open_regular(state, "r", encoding="utf-8") as file:
        json_in = _JsonIn(file)
        if not json_in.take("{"):
            raise ValueError(f"{state.name} holds no JSON object")
        while not json_in.take("}"):
            key = json_in.value()
            if not json_in.take(":"):
                raise ValueError(f"{state.name} is torn")
            if key == "trial_data" and json_in.take("["):
                while not json_in.take("]"):
                    yield json_in.value()
                    json_in.take(",")
            else:
                json_in.value()
            json_in.take(",")
        if json_in.peek():
            raise ValueError(f"{state.name} holds more than one JSON value")


_DECODE = json.JSONDecoder().raw_decode
_JSON_SPACE = (" ", "\t", "\n", "\r")
_NUMBER_GOES_ON = ("", ".", "e", "E", "+", "-")  # what may follow a number's cut prefix


class _JsonIn:
    """A JSON text read a chunk at a time, its values decoded where the reading stands: what is
    held is the chunk and the value being decoded, not the text."""

    CHUNK = 1 << 18

    def __init__(self, file: IO[str]) -> None:
        self.file, self.text, self.at = file, "", 0

    def _more(self) -> bool:
        # At least as much again as is held: a value longer than a chunk is decoded again only
        # as often as the text held doubles.
        chunk = self.file.read(max(self.CHUNK, len(self.text) - self.at))
        if chunk:  # at the end, the text and the place in it stay as they are
            self.text, self.at = self.text[self.at :] + chunk, 0
        return bool(chunk)

    def peek(self) -> str:
        """The next character past white space; "" at the end of the text."""
        while True:
            while self.text[self.at : self.at + 1] in _JSON_SPACE:
                self.at += 1
            if self.at < len(self.text) or not self._more():
                return self.text[self.at : self.at + 1]

    def take(self, sign: str) -> bool:
        """Whether `sign` comes next, and past it if so."""
        if self.peek() != sign:
            return False
        self.at += 1
        return True

    def value(self) -> Any:
        """The JSON value that comes next (ValueError where the text is torn or no JSON)."""
        self.peek()
        while True:
            try:
                value, end = _DECODE(self.text, self.at)
            except ValueError:
                if self._more():  # cut by the chunk's end: read on
                    continue
                raise
            # A number at the chunk's end may go on in the next ("12" of "125", "12." of
            # "12.5", "1e" of "1e5").
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not (number and self.text[end : end + 1] in _NUMBER_GOES_ON) or not self._more():
                self.at = end
                return value


class SavedTrial(NamedTuple):
    """A trial as Tune's saved experiment state holds it."""

    status: str
    failures: int  # so far
    config: dict[str, Any]  # as Tune keeps it; where no result holds it (a pending trial)


def saved_trials(folder: Path) -> dict[str, SavedTrial]:
    """Each trial in Tune's newest saved experiment state, by id; for a trial the journal saw
    end, at least the failures Tune had counted then (its count is taken after Tune handled the
    failure; the saved state is written on Tune's own schedule)."""
    counted = {e.trial_id: e.failures for e in journal(folder)}
    saved: dict[str, SavedTrial] = {}
    try:
        # A trial at a time: parsed, each holds its metadata (its checkpoints, its last result),
        # several times its text.
        for entry in newest_trial_entries(folder):
            t, m = json.loads(entry[0]), json.loads(entry[1])
            if isinstance(t, dict) and isinstance(m, dict) and "trial_id" in t:
                failures = max(int(m.get("num_failures", 0) or 0), counted.get(t["trial_id"], 0))
                config = t.get("config")
                saved[t["trial_id"]] = SavedTrial(
                    str(t.get("status", "UNKNOWN")),
                    failures,
                    config if isinstance(config, dict) else {},
                )
    except (OSError, ValueError, TypeError, IndexError, KeyError):
        return {}
    return saved


def journaled_ends(folder: Path) -> set[str]:
    """The trials whose end the journal saw: those Tune itself stopped (a scheduler's stop,
    their stop criteria or their natural end all pass through its `stop_trial`, which calls the
    callbacks) or that failed. A trial that the run's own end stopped (`fail_fast` after
    another trial's error, `time_budget_s` running out) is marked terminated with no callback,
    so it is not here."""
    return {e.trial_id for e in journal(folder)}


def journal(folder: Path) -> list[TrialEnd]:
    """The journal of ended trials (finished.jsonl), each line that is a `TrialEnd`; [] where
    it cannot be read (`open_regular`)."""
    try:
        with open_regular(Path(folder) / FINISHED_FILE) as file:
            rows = read_rows(file.read())
    except OSError:
        return []
    return [e for e in (record(TrialEnd, r) for r in rows) if e is not None]


def glob_escape(name: str) -> str:
    """`name` as a glob pattern matching only itself."""
    return re.sub(r"([*?[])", r"[\1]", name)


def flatten(tree: dict[str, Any], sep: str = ".", prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of joined key paths: a config's dotted paths
    (`model_config.fcnet_hiddens`), or with `sep="/"` a result's keys as Tune names them
    (`env_runners/episode_return_mean`). Empty mappings stay as values."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, sep, f"{path}{sep}"))
        else:
            flat[path] = value
    return flat


def cut_trial_logs(trial_folder: Path, iteration: int) -> None:
    """Cut a trial's result.json and progress.csv back to the lines of iterations before
    `iteration`, as `latest_results` reads results.jsonl: the trial reports it again. Written
    in place, so Tune's loggers, which hold the files open for appending, append after what is
    kept (a replaced file would leave them writing to the old one)."""
    _cut(trial_folder / TUNE_RESULT_FILE, iteration, _json_iteration)
    _cut(trial_folder / TUNE_PROGRESS_FILE, iteration, _csv_iteration(trial_folder))


def _json_iteration(line: bytes) -> int | None:
    try:
        step = json.loads(line).get("training_iteration")
    except (ValueError, AttributeError):
        return None
    return step if isinstance(step, int) else None


def _csv_iteration(trial_folder: Path) -> Callable[[bytes], int | None]:
    """progress.csv's iteration of a line, by its header's column; the header is kept."""
    import csv

    column: list[int] = []

    def of(line: bytes) -> int | None:
        (cells,) = list(csv.reader([line.decode("utf-8", errors="replace")])) or [[]]
        if not column:
            if "training_iteration" not in cells:
                return -1  # no header: keep the line
            column.append(cells.index("training_iteration"))
            return -1  # the header
        try:
            return int(float(cells[column[0]]))
        except (IndexError, ValueError):
            return None

    return of


def _cut(path: Path, iteration: int, step_of: Callable[[bytes], int | None]) -> None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    lines = data.splitlines(keepends=True)
    kept = []
    for line in lines:
        if not line.endswith(b"\n"):
            break  # a torn last line (a killed run)
        step = step_of(line)
        if step is not None and step < iteration:
            kept.append(line)
    if len(kept) == len(lines):
        return
    with open(path, "r+b", opener=nofollow) as file:  # a link there: refused, not cut through
        file.write(b"".join(kept))
        file.truncate()
