"""results.jsonl read row by row (`tune_app.rundir.stream`): the reader holds a few rows at a
time, whatever the file's length; a long trial keeps a thinned curve with its first, last and
best results; what ranks and judges a trial stays exact; a short trial reads as the whole file
read at once did (`layout.latest_results`, then every row's numbers). Pure, Ray-free."""

from __future__ import annotations

import json
import math
import random
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_app import scoring
from tune_app.rundir import stream
from tune_app.rundir.layout import latest_results
from tune_app.rundir.stream import number_at, numbers, read_jsonl, read_results


class Row(dict):
    """A result row that can be watched: a weak reference tells when the reader let it go."""


def _rows(trials: int, n: int, metric: str = "m", seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"trial_id": f"t{t}", "training_iteration": i, metric: rng.random(), "time_total_s": i}
        for i in range(1, n + 1)
        for t in range(trials)
    ]


def _whole(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, float]]]:
    """Each trial's rows as the reader took them before it streamed: all at once."""
    history: dict[str, list[dict[str, float]]] = {}
    for row in latest_results(rows):
        history.setdefault(str(row.get("trial_id")), []).append(numbers(row))
    return history


def test_the_reader_holds_a_few_rows_at_a_time_whatever_the_files_length():
    """20,000 rows of 2 trials go through holding at most 5 at once: the one read, and each
    trial's last and best (nothing else of a row outlives its line)."""
    alive = most = 0

    def gone() -> None:
        nonlocal alive
        alive -= 1

    def rows():
        nonlocal alive, most
        for plain in _rows(2, 10_000):
            row = Row(plain)
            alive += 1
            weakref.finalize(row, gone)
            most = max(most, alive)
            yield row

    found = read_results(rows(), "m", "max", limit=100)
    assert set(found) == {"t0", "t1"}
    assert 3 <= most <= 5, most
    assert all(len(t.rows) <= 102 and len(t.values) == 10_000 for t in found.values())


def test_read_jsonl_yields_lines_as_it_reads_them(tmp_path):
    """The file is read line by line: the first row comes before the last line is written,
    and lines that are not whole JSON objects are problems, as ever."""
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\n[1]\n\n{"a": 2\n')
    problems: list[str] = []
    rows = read_jsonl(path, problems)
    assert next(rows) == {"a": 1}
    with path.open("a") as more:
        more.write('{"a": 3}\n')  # written after reading began: still read
    assert list(rows) == [{"a": 3}]
    assert [p.split(": ", 1)[1] for p in problems] == [
        "line 2 is not a JSON object; skipped",
        "line 4 is not whole JSON (a killed run?); skipped",
    ]
    assert list(read_jsonl(tmp_path / "none.jsonl", problems)) == []


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too
    | st.floats()  # NaN and the infinities: json writes them as NaN, Infinity
    | st.text(),  # lone surrogates too, which json escapes as \\udxxx
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(), _JSON_VALUES), ascii_only=st.booleans())
def test_a_line_reads_as_json_reads_it(tmp_path_factory, value, ascii_only):
    """The fast decoder leaves no trace: each line reads as `json.loads` reads it, the lines
    it refuses (NaN, 1e400, a lone surrogate) included, and a line json refuses is a problem."""
    path = tmp_path_factory.mktemp("lines") / "results.jsonl"
    line = json.dumps(value, ensure_ascii=ascii_only)
    path.write_text(
        f'{line}\n{{"a": 1e400}}\n{line[:-1]}\n', encoding="utf-8", errors="surrogatepass"
    )
    problems: list[str] = []
    rows = list(read_jsonl(path, problems))
    expected = json.loads(path.read_text(encoding="utf-8", errors="replace").split("\n")[0])
    assert json.dumps(rows[0], sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert rows[1] == {"a": math.inf}
    if value:  # `{` alone is not whole JSON; `}` cut from `{}` would be
        assert len(rows) == 2 and problems[0].endswith(
            "line 3 is not whole JSON (a killed run?); skipped"
        )


@pytest.mark.parametrize("mode", ["max", "min"])
def test_a_long_trials_curve_is_thinned_keeping_its_first_last_and_best(mode):
    rows = _rows(1, 10_000, seed=1)
    peak = 4_321  # a spike no stride lands on
    rows[peak - 1]["m"] = 9.0 if mode == "max" else -9.0
    (found,) = read_results(iter(rows), "m", mode, limit=64).values()
    kept = [r["training_iteration"] for r in found.rows]
    assert len(kept) <= 66 and kept == sorted(kept)
    assert kept[0] == 1 and kept[-1] == 10_000 and peak in kept
    gaps = {b - a for a, b in zip(kept, kept[1:], strict=False)}
    assert max(gaps) <= 10_000 // 32, gaps  # spread over the whole trial, not bunched


def test_what_ranks_and_judges_a_trial_stays_exact_when_its_curve_is_thinned():
    rows = _rows(3, 3_000, seed=2)
    rows[7]["m"] = None  # a diverged result: no value, as logged
    whole = _whole(rows)
    found = read_results(iter(rows), "m", "max", keys=("time_total_s",), limit=50)
    for trial_id, steps in whole.items():
        got = found[trial_id]
        values = [s["m"] for s in steps if "m" in s]
        assert got.values == values
        assert scoring.score(got.values, "avg", "max") == scoring.score(values, "avg", "max")
        assert got.iterations == 3_000 and got.last == steps[-1]
        assert got.lasts == {"time_total_s": 3_000}
        assert dict(got.curve) == {int(s["training_iteration"]): s["m"] for s in steps}
        assert got.curve.get(1_234) == steps[1_233]["m"] and got.curve.get(0) is None


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(_rows(2, 5), id="plain"),
        pytest.param(
            [
                {"trial_id": "a", "training_iteration": i, "m": i, "config": {"x": 1}}
                for i in (1, 2, 3, 4, 2, 3)
            ],
            id="a-resume-replays-from-iteration-2",
        ),
        pytest.param(
            [
                {"trial_id": "a", "training_iteration": 1, "m": 1},
                {"trial_id": "b", "training_iteration": 1, "m": 5},
                {"trial_id": "a", "m": 7},
                {"trial_id": "a", "training_iteration": 2, "m": 2},
                {"trial_id": "a", "training_iteration": 1, "m": 3},
            ],
            id="a-replay-keeps-a-row-without-an-iteration-and-the-order-of-trials",
        ),
        pytest.param(
            [
                {"trial_id": "a", "training_iteration": 1, "env": {"r": {"m": 1.5}}, "ok": True},
                {"trial_id": "a", "training_iteration": 2, "env": {"r": {"m": None}}, "s": "x"},
            ],
            id="nested-keys-nulls-bools-and-text",
        ),
    ],
)
def test_a_short_trial_reads_as_the_whole_file_read_at_once(rows):
    metric = "env/r/m" if "env" in rows[0] else "m"
    whole = _whole(rows)
    found = read_results(iter(rows), metric, "max")
    assert list(found) == list(whole)  # trials in the order of their first result kept
    assert {t: r.rows for t, r in found.items()} == whole
    for trial_id, steps in whole.items():
        values = [s[metric] for s in steps if metric in s]
        assert found[trial_id].values == [None if v is None else float(v) for v in values]


@pytest.mark.parametrize(
    ("row", "key"),
    [
        pytest.param({"m": 1}, "m", id="top"),
        pytest.param({"a": {"b": {"c": 2.5}}}, "a/b/c", id="nested"),
        pytest.param({"a/b": {"c": 3}}, "a/b/c", id="a-name-holding-a-slash"),
        pytest.param({"a": {"b/c": None}}, "a/b/c", id="null-under-a-slashed-name"),
        pytest.param({"m": True}, "m", id="a-bool-is-no-number"),
        pytest.param({"m": "0.5"}, "m", id="text-is-no-number"),
        pytest.param({"m": {"x": 1}}, "m", id="a-dict-is-no-number"),
        pytest.param({"config": {"m": 1}}, "config/m", id="config-is-not-a-result"),
        pytest.param({"a": {"b": 1}}, "a/c", id="absent"),
    ],
)
def test_a_key_is_found_in_a_row_as_flattening_it_finds_it(row, key):
    expected = numbers(row).get(key, "absent")
    found = number_at(row, key)
    assert (found if found is not stream._ABSENT else "absent") == expected


def test_a_results_file_of_many_rows_reads_back_whole_in_what_ranks_it(tmp_path):
    """Written, read line by line: each trial's last, best and count as the rows hold them."""
    rows = _rows(4, 2_000, seed=3)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = read_results(read_jsonl(path, []), "m", "min", limit=20)
    for trial_id, steps in _whole(rows).items():
        values = [s["m"] for s in steps]
        assert found[trial_id].values[-1] == values[-1]
        assert min(v for v in found[trial_id].values if v is not None) == min(values)
        assert len(found[trial_id].rows) <= 22
        assert not any(math.isnan(v) for r in found[trial_id].rows for v in r.values())


def test_a_generated_big_run_reads_back_its_trials_exactly_with_thinned_curves(tmp_path):
    """The benchmark's run (`benchmarks.big_results`), small: read back from its results
    alone (summary.json gone), every trial scores, ends and stops early as the summary the
    generator wrote says, while the plots get at most CURVE_POINTS (+2) results a trial."""
    from benchmarks.big_results import make
    from tune_app.rundir.layout import SUMMARY_FILE
    from tune_app.rundir.read import read_experiment

    folder = make(tmp_path / "big", megabytes=2.0, trials=8)
    written = {t.trial_id: t for t in read_experiment(folder).trials}
    (folder / SUMMARY_FILE).unlink()
    exp = read_experiment(folder)
    assert len(exp.trials) == 8 and not exp.problems
    for t in exp.trials:
        assert (t.score, t.best, t.last, t.iterations, t.stopped_early) == (
            written[t.trial_id].score,
            written[t.trial_id].best,
            written[t.trial_id].last,
            written[t.trial_id].iterations,
            written[t.trial_id].stopped_early,
        )
    longest = max(t.iterations for t in exp.trials)
    assert longest > stream.CURVE_POINTS
    assert all(len(rows) <= stream.CURVE_POINTS + 2 for rows in exp.history.values())
    assert all(len(exp.metric_curves()[t.trial_id]) == t.iterations for t in exp.trials)


def _flat_numbers(node: dict, path: str = "") -> dict:
    """What `numbers` means, written plainly: every number (a bool is none; null stays, as
    None) under a `/`-joined key, the top level's config and trial id left out."""
    out: dict = {}
    for k, value in node.items():
        if not path and k in ("config", "trial_id"):
            continue
        key = f"{path}/{k}" if path else str(k)
        if isinstance(value, dict):
            out.update(_flat_numbers(value, key))
        elif value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            out[key] = value
    return out


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3), st.lists(st.none())
)
_NAMES = st.sampled_from(["m", "a", "b/c", "config", "trial_id", "x"])


@settings(max_examples=300, deadline=None)
@given(
    row=st.recursive(
        st.dictionaries(_NAMES, _LEAVES, max_size=5),
        lambda inner: st.dictionaries(_NAMES, st.one_of(_LEAVES, inner), max_size=5),
        max_leaves=20,
    )
)
def test_a_rows_numbers_are_every_number_under_its_joined_key(row):
    assert numbers(row) == _flat_numbers(row)


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@settings(max_examples=40, deadline=None)
@given(
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    seed=st.integers(0, 1000),
)
def test_a_followed_log_reads_as_the_lines_written_so_far_read_whole(tmp_path_factory, cuts, seed):
    """Written in pieces that cut lines anywhere (a line half written, a replayed iteration, a
    line that is no JSON, a blank one), the log followed reads after each piece as its whole
    lines so far read at once, and at the end as the whole file."""
    rng = random.Random(seed)
    rows = _rows(3, 40, seed=seed)
    for at in sorted(rng.sample(range(len(rows)), 3), reverse=True):  # resumes replay a step
        rows.insert(at, {**rows[at], "training_iteration": 1, "m": rng.random()})
    data = _lines(rows[:50]) + b"[1]\n\n{torn\n" + _lines(rows[50:])
    path = tmp_path_factory.mktemp("log") / "results.jsonl"
    follower = stream.ResultsFollower(path, "m", "max", limit=16)
    assert follower.read([]) == {}  # no file yet
    written = 0
    for cut in [*sorted(c * len(data) // 10_000 for c in cuts), len(data)]:
        with path.open("ab") as log:
            log.write(data[written:cut])
        written = max(written, cut)
        whole = data[:written].rsplit(b"\n", 1)[0] + b"\n" if b"\n" in data[:written] else b""
        expected_problems: list[str] = []
        expected = read_results(
            stream.read_jsonl(_copy(path, whole), expected_problems), "m", "max", limit=16
        )
        problems: list[str] = []
        assert list(follower.read(problems).items()) == list(expected.items())  # in order too
        assert [p.split(": ", 1)[1] for p in problems] == [
            p.split(": ", 1)[1] for p in expected_problems
        ]


def _copy(path, data: bytes):
    copy = path.with_name("whole.jsonl")
    copy.write_bytes(data)
    return copy


def test_a_followed_log_replaced_or_cut_is_read_again_and_only_touched_trials_are_summed(
    tmp_path, monkeypatch
):
    path = tmp_path / "results.jsonl"
    rows = _rows(4, 10)
    path.write_bytes(_lines(rows))
    follower = stream.ResultsFollower(path, "m", "max")
    assert follower.read([]) == read_results(rows, "m", "max")
    summed: list[int] = []
    done = stream._Trial.done
    monkeypatch.setattr(stream._Trial, "done", lambda self: summed.append(1) or done(self))
    more = [{"trial_id": "t2", "training_iteration": 11, "m": 0.5}]
    with path.open("ab") as log:
        log.write(_lines(more))
    expected = read_results(rows + more, "m", "max")
    summed.clear()
    assert follower.read([]) == expected
    assert len(summed) == 1  # t2 alone: the other trials' rows are as they were
    fewer = rows[:8]
    path.write_bytes(_lines(fewer))  # cut (a new start of the file): read from its start
    assert follower.read([]) == read_results(fewer, "m", "max")
    other = tmp_path / "other.jsonl"
    other.write_bytes(_lines(rows[:12] + more * 3))
    other.replace(path)  # replaced by a longer file: read from its start
    assert follower.read([]) == read_results(rows[:12] + more * 3, "m", "max")
    regrown = [{**r, "m": -1.0} for r in rows]
    path.write_bytes(_lines(regrown))  # cut and written again, longer, in the same file
    assert list(follower.read([]).items()) == list(read_results(regrown, "m", "max").items())


def test_a_followed_log_splits_lines_as_the_whole_read_does(tmp_path):
    """At "\n" alone: a CRLF line is one line, a lone CR inside one no break; a byte that is
    no UTF-8 is replaced, as the whole read replaces it."""
    path = tmp_path / "results.jsonl"
    row = {"trial_id": "t\udcff", "training_iteration": 1, "m": 1.0}
    data = b'{"trial_id": "a", "training_iteration": 1, "m": 1.0}\r\n'
    data += b'{"trial_id": "b",\r "training_iteration": 1, "m": 2.0}\n'
    data += b'{"trial_id": "c\xff", "training_iteration": 1, "m": 3.0}\n'
    path.write_bytes(data)
    problems: list[str] = []
    whole = read_results(read_jsonl(path, problems), "m", "max")
    assert list(whole) == ["a", "b", "c\ufffd"] and problems == []
    assert list(stream.ResultsFollower(path, "m", "max").read([]).items()) == list(whole.items())
    assert row  # a lone surrogate in a line given as text is json's to read
    assert stream._parse(json.dumps(row, ensure_ascii=False)) == row
