"""results.jsonl read once, row by row, keeping per trial only what the readers use.

A run's results log can hold millions of rows (500 MB: 200 trials of 10,000 results), which
read whole and kept as dicts took six times the file in memory. Here each line is parsed and
dropped: a trial keeps its metric's, iterations' and a few named keys' values as compact
columns (8 bytes a result: what its score, best, last value, rung values and objectives need,
exact), its last result and config, and at most `CURVE_POINTS` whole results for the plots,
thinned by a stride that doubles as the trial grows, always with its first, last and best
(a trial with fewer results keeps them all, so a small run reads as it did whole). Rows are
taken as `layout.latest_results` takes them: a row for an iteration its trial already has
replaces that trial's rows from that iteration on.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tune_app import scoring
from tune_app.errors import error_line
from tune_app.rundir.files import open_regular

CURVE_POINTS = 500  # whole results kept per trial for the plots (more: thinned to 250-500)
ITERATION = "training_iteration"
_SKIPPED = ("config", "trial_id")  # never numbers of a result
_ABSENT = object()
_RAGGED = object()


def read_jsonl(path: Path, problems: list[str]) -> Iterator[dict[str, Any]]:
    """The whole JSON objects of a JSON-lines file, one at a time; each line that is not one
    is a problem (a missing file has none)."""
    try:  # as text: JSON is UTF-8, and a byte that is not is replaced, not fatal
        # Lines end at "\n" alone, as a JSON-lines file's do (and `ResultsFollower` reads them).
        file = open_regular(path, "r", encoding="utf-8", errors="replace", newline="\n")
    except FileNotFoundError:
        return
    except OSError as err:
        problems.append(f"{path}: unreadable ({error_line(err)}); skipped")
        return
    with file:
        number = 0
        try:
            for number, line in enumerate(file, 1):  # noqa: B007 - the line read when it fails
                row = _object(line, path, number, problems)
                if row is not None:
                    yield row
        except OSError as err:
            problems.append(
                f"{path}: unreadable after line {number} ({error_line(err)}); cut there"
            )


def _object(line: str, path: Path, number: int, problems: list[str]) -> dict[str, Any] | None:
    """Line `number`'s JSON object; None for a blank line, or one that is not a whole JSON
    object (a problem)."""
    if line.isspace():
        return None
    row = _parse(line)
    if row is _RAGGED:
        problems.append(f"{path}: line {number} is not whole JSON (a killed run?); skipped")
        return None
    if not isinstance(row, dict):
        problems.append(f"{path}: line {number} is not a JSON object; skipped")
        return None
    return row


_DECODE = msgspec.json.Decoder().decode  # about 4x json.loads on a result row


def _parse(line: str) -> Any:
    """A line's JSON value, or _RAGGED where it is not whole JSON. What msgspec refuses and
    Python's json reads (NaN and Infinity, a number beyond a float, a lone surrogate) is read
    by json, so every line means what `json.loads` makes of it."""
    try:
        return _DECODE(line)
    except (msgspec.DecodeError, UnicodeEncodeError):  # the latter: a lone surrogate in `line`
        pass
    except RecursionError:  # nested deeper than a parser goes
        return _RAGGED
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # the latter: nested deeper than the parser goes
        return _RAGGED


def numbers(row: dict[str, Any]) -> dict[str, float]:
    """A result row's numbers as one level of `/`-joined keys, Tune's way (env_runners/...).

    A key reported as null (NaN or infinity in the run) stays, as None, so divergence shows.
    """
    out: dict[str, Any] = {}
    # The top level apart from the nested ones: a hot loop (every row of a run read back).
    for k, value in row.items():
        kind = type(value)
        if kind is float or kind is int or value is None:
            out[k if type(k) is str else str(k)] = value
        elif kind is dict:
            if k not in _SKIPPED:
                _walk(value, str(k), out)
        elif kind is not str and _is_number(value):
            out[k if type(k) is str else str(k)] = value
    for skipped in _SKIPPED:
        out.pop(skipped, None)
    return out


def _walk(node: dict[str, Any], path: str, out: dict[str, Any]) -> None:
    for k, value in node.items():
        kind = type(value)
        if kind is dict:
            _walk(value, f"{path}/{k}", out)
        elif kind is float or kind is int or value is None or _is_number(value):
            out[f"{path}/{k}"] = value


def number_at(row: dict[str, Any], key: str) -> Any:
    """`numbers(row).get(key, _ABSENT)` without flattening the row: the number (or None) at
    the `/`-joined `key`, trying each split of it, as names may hold a `/` themselves."""
    return _at(row, key, top=True)


def _at(node: dict[str, Any], key: str, top: bool = False) -> Any:
    cut = len(key)
    while cut > 0:
        name = key[:cut]
        if name in node and not (top and name in _SKIPPED):
            value = node[name]
            if cut == len(key):
                if _is_number(value):
                    return value
            elif isinstance(value, dict):
                found = _at(value, key[cut + 1 :])
                if found is not _ABSENT:
                    return found
        cut = key.rfind("/", 0, cut)
    return _ABSENT


def _is_number(value: Any) -> bool:
    kind = type(value)  # JSON's numbers first: the costly test only for what else comes
    if kind is float or kind is int or value is None:
        return True
    return kind is not bool and isinstance(value, int | float)


def _float(value: Any) -> float:
    """A value as a column holds it: NaN for None (a non-finite number, as logged)."""
    return math.nan if value is None else float(value)


class Curve(Mapping[int, float | None]):
    """A trial's metric by iteration (`rungs.Curves`' inner mapping), held as two columns."""

    def __init__(self, steps: array, values: array) -> None:
        self._steps, self._values = steps, values

    def __getitem__(self, step: int) -> float | None:
        at = bisect.bisect_left(self._steps, step)
        if at == len(self._steps) or self._steps[at] != step:
            raise KeyError(step)
        value = self._values[at]
        return None if math.isnan(value) else value

    def __iter__(self) -> Iterator[int]:
        return (int(s) for s in self._steps)

    def __len__(self) -> int:
        return len(self._steps)


@dataclass
class TrialRows:
    """What one trial's results leave once read: `rows` for the plots (every result, or
    `CURVE_POINTS` of them with the first, last and best), `values` (its metric in order, None
    where not finite: results without it left out), its iterations, last result, config, the
    last finite value of each named key, and its metric by iteration."""

    rows: list[dict[str, float]] = field(default_factory=list)
    values: list[float | None] = field(default_factory=list)
    iterations: int = 0
    last: dict[str, float] = field(default_factory=dict)
    config: Any = None
    lasts: dict[str, float | None] = field(default_factory=dict)
    curve: Mapping[int, float | None] = field(default_factory=dict)
    first: int = 0  # the line of its first result kept: trials go in that order


_INT = 1  # the row's training_iteration is an int: what replays are judged by
_METRIC = 2  # the row holds the metric (a number or null)


class _Trial:
    """One trial's results so far, as the rows come."""

    def __init__(self, metric: str | None, mode: str | None, keys: tuple[str, ...]) -> None:
        self.metric = metric if metric not in _SKIPPED else None
        self.mode, self.keys = mode, keys
        self.seq = array("q")  # each kept row's line
        self.flags = bytearray()
        self.steps = array("d")  # training_iteration (NaN: none)
        self.values = array("d")  # the metric (NaN: null or none)
        self.columns = {k: array("d") for k in keys}  # NaN: not a finite number
        self.kept: list[tuple[int, dict[str, float]]] = []  # (position, numbers), thinned
        self.stride = 1
        self.best: tuple[int, float, dict[str, Any]] | None = None  # position, value, row
        self.top = -math.inf  # the last int iteration kept: a row at or under it replays
        self.last_row: dict[str, Any] = {}
        self.config: Any = None

    def add(self, seq: int, row: dict[str, Any], limit: int) -> None:
        step: Any = row.get(ITERATION)
        whole = type(step) is int  # what replays are judged by (a bool is no iteration)
        if whole and step <= self.top:
            self._replay(step)
        position = len(self.seq)
        # Most rows hold the metric at the top as a float: look no further (a hot loop).
        value: Any = row.get(self.metric, _ABSENT) if self.metric else _ABSENT
        number = type(value) is float or type(value) is int
        if not number and self.metric:
            value = number_at(row, self.metric)
        self.seq.append(seq)
        self.flags.append((_INT if whole else 0) | (_METRIC if value is not _ABSENT else 0))
        if whole or type(step) is float:
            self.steps.append(step)
        else:
            self.steps.append(math.nan if step is None or not _is_number(step) else float(step))
        self.values.append(value if number else _float(value) if value is not _ABSENT else math.nan)
        if whole:
            self.top = step
        if self.columns:
            self._add_keys(row)
        config = row.get("config")
        if type(config) is dict:
            self.config = config
        self.last_row = row
        if value is not None and value is not _ABSENT and -math.inf < value < math.inf:
            best = self.best
            if best is None or (value < best[1] if self.mode == "min" else value > best[1]):
                self.best = (position, float(value), row)
        if position % self.stride == 0:
            self._keep(position, row, limit)

    def _add_keys(self, row: dict[str, Any]) -> None:
        for key, column in self.columns.items():
            kept = scoring.finite(number_at(row, key))
            column.append(math.nan if kept is None else kept)

    def _keep(self, position: int, row: dict[str, Any], limit: int) -> None:
        """Keep the row for the plots; past `limit` kept, every other one goes, the stride
        doubling (the first row, at 0, always stays)."""
        self.kept.append((position, numbers(row)))
        if len(self.kept) > limit:
            self.stride *= 2
            self.kept = [(p, r) for p, r in self.kept if p % self.stride == 0]

    def _replay(self, step: int) -> None:
        """Drop the rows a replayed `step` replaces: the trial's latest rows whose int
        iteration is `step` or more (rows without one stay, as `latest_results` keeps them)."""
        n = len(self.seq)
        i = n - 1
        gone = []
        while i >= 0:
            if self.flags[i] & _INT:
                if self.steps[i] < step:
                    break
                gone.append(i)
            i -= 1
        if not gone:
            return
        start = gone[-1]
        cut = set(gone)
        stay = [p for p in range(start, n) if p not in cut]
        moved = {p: start + k for k, p in enumerate(stay)}
        columns: list[array[Any]] = [self.seq, self.steps, self.values, *self.columns.values()]
        for column in columns:
            tail = [column[p] for p in stay]
            del column[start:]
            column.extend(tail)
        flags = [self.flags[p] for p in stay]
        del self.flags[start:]
        self.flags.extend(flags)
        self.kept = [
            (p if p < start else moved[p], r) for p, r in self.kept if p in moved or p < start
        ]
        ints = [self.steps[i] for i in range(len(self.seq)) if self.flags[i] & _INT]
        self.top = ints[-1] if ints else -math.inf
        if self.best is not None and self.best[0] >= start:
            # The best was replaced: the best of what is kept stands for it on the plots.
            self.best = None
            for p, r in self.kept:
                value = scoring.finite(r.get(self.metric or ""))
                top: float | None = None if self.best is None else self.best[1]
                if value is not None and scoring.better(value, top, self.mode):
                    self.best = (p, value, r)

    def done(self) -> TrialRows:
        n = len(self.seq)
        rows = dict(self.kept)
        if self.best is not None and self.best[0] not in rows:
            rows[self.best[0]] = numbers(self.best[2])
        last = numbers(self.last_row) if n else {}
        if n:
            rows[n - 1] = rows.get(n - 1, last)
        has = [i for i in range(n) if self.flags[i] & _METRIC]
        values = [None if math.isnan(self.values[i]) else self.values[i] for i in has]
        steps = [self.steps[i] for i in has if not math.isnan(self.steps[i])]
        curve: Mapping[int, float | None]
        if all(a < b for a, b in zip(steps, steps[1:], strict=False)) and all(
            s == int(s) for s in steps
        ):
            curve = Curve(
                array("d", steps),
                array("d", [self.values[i] for i in has if not math.isnan(self.steps[i])]),
            )
        else:  # out of order or fractional iterations: the last row of each wins, as ever
            curve = {
                int(self.steps[i]): values[k]
                for k, i in enumerate(has)
                if not math.isnan(self.steps[i])
            }
        return TrialRows(
            rows=[rows[p] for p in sorted(rows)],
            values=values,
            iterations=int(
                max((s if not math.isnan(s) and s else 0 for s in self.steps), default=0)
            ),
            last=last,
            config=self.config,
            lasts={k: _last_finite(c) for k, c in self.columns.items()},
            curve=curve,
            first=self.seq[0] if n else 0,
        )


def _last_finite(column: array) -> float | None:
    return next((v for v in reversed(column) if not math.isnan(v)), None)


def read_results(
    rows: Iterable[dict[str, Any]],
    metric: str | None,
    mode: str | None,
    keys: tuple[str, ...] = (),
    limit: int = CURVE_POINTS,
) -> dict[str, TrialRows]:
    """Trial id -> what its results leave (`TrialRows`), from results.jsonl's rows as they
    come; trials in the order of their first result kept. `keys`: those whose last finite
    value each trial keeps (objectives, constraints)."""
    trials: dict[str, _Trial] = {}
    for seq, row in enumerate(rows):
        _add(trials, seq, row, metric, mode, keys, limit)
    return _in_order({t: trial.done() for t, trial in trials.items()})


def _add(
    trials: dict[str, _Trial],
    seq: int,
    row: dict[str, Any],
    metric: str | None,
    mode: str | None,
    keys: tuple[str, ...],
    limit: int,
) -> str:
    """Row `seq` added to its trial's (made on its first row); the trial's id."""
    trial_id = str(row.get("trial_id"))
    trial = trials.get(trial_id)
    if trial is None:
        trial = trials[trial_id] = _Trial(metric, mode, keys)
    trial.add(seq, row, limit)
    return trial_id


def _in_order(done: dict[str, TrialRows]) -> dict[str, TrialRows]:
    return dict(sorted(done.items(), key=lambda item: item[1].first))


class ResultsFollower:
    """A results log read on from where the last read stopped, as `read_results` reads it
    whole: a live page rereads only the lines written since, and only the trials they touch
    are summed up again. A line still being written (no newline yet) waits for the next read;
    a file that shrank or was replaced is read again from its start. A run that has ended is
    read whole (`read_results`), where a torn last line is a problem."""

    def __init__(
        self,
        path: Path,
        metric: str | None,
        mode: str | None,
        keys: tuple[str, ...] = (),
        limit: int = CURVE_POINTS,
    ) -> None:
        self.path, self.reads = path, (metric, mode, keys)
        self.limit = limit
        self._start(None)

    def _start(self, identity: tuple[int, int] | None) -> None:
        self._identity = identity  # the file's (device, inode)
        self._offset = 0  # bytes read: every line before it whole
        self._last = b""  # the last line read, which must still be there to read on
        self._lines = 0
        self._rows = 0  # JSON objects among them: each row's number, as read_results counts
        self._trials: dict[str, _Trial] = {}
        self._done: dict[str, TrialRows] = {}
        self._problems: list[str] = []

    def read(self, problems: list[str]) -> dict[str, TrialRows]:
        """Trial id -> what its results leave so far; the file's problems so far added to
        `problems`."""
        try:
            file = open_regular(self.path)
        except FileNotFoundError:
            self._start(None)
            return {}
        except OSError as err:
            self._start(None)
            problems.append(f"{self.path}: unreadable ({error_line(err)}); skipped")
            return {}
        touched: set[str] = set()
        with file:
            try:
                self._read_on(file, touched)
            except OSError as err:
                problems.append(
                    f"{self.path}: unreadable after line {self._lines} "
                    f"({error_line(err)}); cut there"
                )
        for trial_id in touched:
            self._done[trial_id] = self._trials[trial_id].done()
        problems.extend(self._problems)
        return _in_order(dict(self._done))

    def _read_on(self, file: Any, touched: set[str]) -> None:
        """Read the whole lines after those read, from their start where the file is not the
        one read before (replaced, or cut: its last line read is not where it was)."""
        found = os.fstat(file.fileno())
        identity = (found.st_dev, found.st_ino)
        if identity != self._identity or found.st_size < self._offset:
            self._start(identity)
        elif self._last:
            file.seek(self._offset - len(self._last))
            if file.read(len(self._last)) != self._last:
                self._start(identity)
        file.seek(self._offset)
        metric, mode, keys = self.reads
        for raw in file:
            if not raw.endswith(b"\n"):
                break  # being written: read whole next time
            self._offset += len(raw)
            self._last = raw
            self._lines += 1
            row = _object(
                raw.decode("utf-8", errors="replace"), self.path, self._lines, self._problems
            )
            if row is not None:
                touched.add(_add(self._trials, self._rows, row, metric, mode, keys, self.limit))
                self._rows += 1
