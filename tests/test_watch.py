"""`report --watch`: the page is rewritten with a reload tag and a live line while the run's
folder has a live writer, at most every `--every` seconds, and a last time without either once
the run has ended; the trial timeline draws one bar per trial. Run folders are written here as
the app writes them, without Ray; the loop runs on a fake clock and a fake liveness."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from tune_app import eta
from tune_app.readback import report, watch
from tune_app.readback.plots import timeline
from tune_app.rundir import lock
from tune_app.rundir import read as results
from tune_app.rundir.location import RunLocation

from .conftest import refused

REFRESH = re.compile(r'<meta http-equiv="refresh" content="(\d+)">')

# (trial, status in the journal or None: still running, [(logged_at, time_this_iter_s), ...])
TRIALS = [
    ("abcde_00000", "TERMINATED", [(102.0, 2.0), (104.0, 2.0)]),
    ("abcde_00001", None, [(103.0, 2.0), (105.0, 2.0), (107.0, 2.0)]),
    ("abcde_00002", "ERROR", [(110.0, 5.0)]),
    ("abcde_00003", "TERMINATED", [(111.0, 1.0), (112.0, 1.0)]),
]


def live_run(folder: Path, **recorded) -> Path:
    """A run folder as a run still going leaves it: no summary.json, trial 00001 not in the
    journal, every row with its `logged_at` and `time_this_iter_s`; `recorded`: run.json's
    other keys (this one predates the trial count and the scheduler's plan)."""
    folder.mkdir(parents=True)
    record = {"experiment": "e", "metric": "score", "mode": "max", "searched": ["x"]}
    record |= {"scheduler": "fifo", "stop": {}, **recorded}
    (folder / "run.json").write_text(json.dumps(record))
    rows = []
    for n, (trial_id, _, steps) in enumerate(TRIALS):
        for i, (at, took) in enumerate(steps, 1):
            row = {"trial_id": trial_id, "training_iteration": i, "score": n + i / 10}
            row |= {"logged_at": at, "time_this_iter_s": took}
            if i == 1:
                row["config"] = {"x": n / 10}
            rows.append(json.dumps(row) + "\n")
    (folder / "results.jsonl").write_text("".join(rows))
    journal = [{"trial_id": t, "status": s} for t, s, _ in TRIALS if s]
    (folder / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))
    return folder


class Clock:
    """A fake monotonic clock that only `sleep` and a write move."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def watched(
    folder: Path, live: list[bool], every: float = 10, write_s: float = 3.0, render: bool = True
):
    """Run the loop on `folder` with `live` as the answers to "is the run live?"; each write
    takes `write_s` on the fake clock (and only renders the page with `render`). Returns (pages
    as written, their start times, sleeps, the path returned)."""
    clock, answers = Clock(), iter(live)
    pages: list[str] = []
    starts: list[float] = []
    out = folder / "report.html"

    def write(exps, note):
        starts.append(clock.now)
        clock.now += write_s
        if not render:
            pages.append(f"live={note is not None}")
            return out
        path = report.write(exps, out, source=str(folder), live=note)
        pages.append(path.read_text())
        return path

    def reread(live: bool):
        reads.append(live)
        return results.load(folder, followers if live else None)

    reads: list[bool] = []
    followers: results.Followers = {}
    path = watch.watch(
        results.load(folder),
        reread,
        write,
        every=every,
        is_live=lambda exps: next(answers),
        sleep=clock.sleep,
        clock=lambda: clock.now,
        stamp=lambda: "12:34:56",
        now=lambda: 120.0,
    )
    assert reads == live  # read on while the run lives; whole for the last page
    return pages, starts, clock.sleeps, path


def test_a_live_run_read_on_reads_as_the_run_read_whole(tmp_path):
    """The live page reads each results log on from its last read: what it reads is what the
    run read whole gives, before and after more results, half a line and a change of the
    run's metric (run.json rewritten: the log read again for it)."""
    run = live_run(tmp_path / "e")
    followers: results.Followers = {}
    assert results.load(run, followers) == results.load(run)
    with (run / "results.jsonl").open("a") as log:
        log.write(json.dumps({"trial_id": "abcde_00001", "training_iteration": 4, "score": 9.0}))
        log.write('\n{"trial_id": "abcde_00004", "training_iter')
    read_on = results.load(run, followers)
    assert read_on.pop().summary.trials[1].iterations == 4
    (run / "run.json").write_text(json.dumps({"experiment": "e", "metric": "x", "mode": "min"}))
    with (run / "results.jsonl").open("a") as log:
        log.write('ation": 1, "score": 0.5, "x": 3}\n')
    assert results.load(run, followers) == results.load(run)


def test_a_live_run_is_rewritten_with_a_reload_until_it_ends(tmp_path):
    run = live_run(tmp_path / "e")
    pages, _, _, path = watched(run, [True, True, False])
    assert path == run / "report.html" and path.read_text() == pages[-1]
    assert len(pages) == 3
    line = "live: updated 12:34:56; 1 trial running, 3 done; time left unknown yet"
    for page in pages[:2]:
        assert REFRESH.findall(page) == ["10"]
        assert line in page
        assert "This run did not finish" not in page  # the live line says so instead
    assert not REFRESH.search(pages[-1]) and "live: updated" not in pages[-1]
    assert "This run did not finish" in pages[-1]
    assert not list(tmp_path.rglob(".*.tmp"))  # every write renamed into place


@pytest.mark.parametrize(
    ("write_s", "sleeps"),
    [
        pytest.param(3.0, [7.0, 7.0], id="a fast write waits out the rest of the interval"),
        pytest.param(12.0, [0.0, 0.0], id="a write slower than the interval: no wait"),
    ],
)
def test_writes_start_at_most_every_interval(tmp_path, write_s, sleeps):
    run = live_run(tmp_path / "e")
    pages, starts, slept, _ = watched(run, [True, True, False], 10, write_s, render=False)
    assert pages == ["live=True", "live=True", "live=False"]
    assert slept == sleeps
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps == [max(10.0, write_s)] * 2


def test_a_run_not_live_at_the_start_is_written_once(tmp_path):
    run = live_run(tmp_path / "e")
    pages, _, slept, path = watched(run, [False])
    assert len(pages) == 1 and slept == []
    assert not REFRESH.search(pages[0]) and path.exists()


# The fixture's first trial started at 100 (its first result at 102 took 2 s); at 120 the four
# trials have run 2 + 3 + 1 + 2 = 8 iterations, three of them ended.
NOW = 120.0


@pytest.mark.parametrize(
    ("recorded", "left"),
    [
        # 10 trials, none cut early, each to 4 iterations: ended trials count whole (3), the
        # running one 3/4 of its work; 20 s for 3.75 trials' work, 6.25 to go.
        pytest.param(
            {"trials": 10, "stop": {"training_iteration": 4}},
            "about 33s left at the rate so far",
            id="fifo-by-the-stop-bound",
        ),
        # ASHA's plan: trials end at 1 (half of them) or 5; the running one (3 iterations)
        # expects 5; six trials not started expect 3 each: 2 + 18 = 20 iterations to go at
        # 8 iterations in 20 s.
        pytest.param(
            {"trials": 10, "scheduler": "asha", "trial_ends": [[1, 0.5], [5, 0.5]]},
            "about 50s left at the rate so far",
            id="asha-by-the-schedulers-plan",
        ),
        pytest.param(
            {"trials": 10, "scheduler": "median", "trial_ends": []},
            eta.UNKNOWN,
            id="median-has-no-plan",
        ),
        # No stop bound: a running trial's share is unknown, only ended trials count (3 of 4).
        pytest.param({"trials": 4}, "about 7s left at the rate so far", id="no-bound-last-trial"),
        pytest.param({}, "time left unknown yet", id="run-json-without-a-trial-count"),
    ],
)
def test_the_live_line_tells_the_time_left_as_the_progress_line_counts_it(tmp_path, recorded, left):
    """The page counts with the trial count and the scheduler's plan run.json keeps, over the
    time since the first trial started, by `eta.seconds_left`, the progress line's own count."""
    (exp,) = results.load(live_run(tmp_path / "e", **recorded))
    line = watch.note([exp], 10, "12:34:56", NOW).line
    assert line == f"live: updated 12:34:56; 1 trial running, 3 done; {left}"


def test_the_live_line_counts_a_trial_waiting_for_its_turn_as_pending(tmp_path):
    """Tune's saved state holds a trial made but not started (2 run at once): not running."""
    run = live_run(tmp_path / "e", trials=5)
    waiting = {"trial_id": "abcde_00004", "status": "PENDING", "config": {"x": 0.4}}
    state = {"trial_data": [[json.dumps(waiting), json.dumps({})]]}
    (run / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(state))
    (exp,) = results.load(run)
    line = watch.note([exp], 10, "12:34:56", NOW).line
    assert line.startswith("live: updated 12:34:56; 1 trial running, 1 pending, 3 done; ")
    assert exp.summary.trials[-1].params == {"x": 0.4}  # its config, from Tune's state


def test_the_live_line_says_when_nothing_is_left(tmp_path):
    run = live_run(tmp_path / "e", trials=4)
    journal = run / "finished.jsonl"
    journal.write_text(
        journal.read_text() + json.dumps({"trial_id": "abcde_00001", "status": "TERMINATED"}) + "\n"
    )
    (exp,) = results.load(run)
    assert watch.note([exp], 10, "12:34:56", NOW).line.endswith(
        "0 trials running, 4 done; nothing left to run"
    )


def test_the_run_is_live_while_a_process_holds_its_lock(tmp_path):
    run = live_run(tmp_path / "e")
    (exp,) = results.load(run)
    assert not watch.running([exp])
    RunLocation(run).lock_file.write_text(json.dumps(asdict(lock.Owner.me())))
    assert watch.running([exp])
    gone = lock.Owner("elsewhere", 1, "2026-01-01 00:00:00+0000")
    RunLocation(run).lock_file.write_text(json.dumps(asdict(gone) | {"host": "x"}))
    assert watch.running([exp])  # another host's lock: only its lease's age could tell


def test_the_command_writes_an_ended_run_once_and_prints_its_path(tmp_path, cli):
    run = live_run(tmp_path / "e")
    result = cli("report", run, "--watch", "--every", "2")
    assert result.code == 0, result.err
    assert result.out.strip() == str(run / "report.html")
    assert "written once" in result.err
    assert not REFRESH.search((run / "report.html").read_text())


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        pytest.param(["--watch", "--every", "1"], "--every must be at least 2", id="too often"),
        pytest.param(["--watch", "--every", "nan"], "got nan", id="nan"),  # crashed with exit 1
        pytest.param(["--watch", "--every", "inf"], "got inf", id="inf"),
        pytest.param(["--every", "5"], "--every needs --watch", id="every without watch"),
    ],
)
def test_bad_intervals_are_refused_in_one_line_before_writing(tmp_path, cli, argv, words):
    run = live_run(tmp_path / "e")
    refused(cli("report", run, *argv), words)
    assert not (run / "report.html").exists()


def test_ctrl_c_ends_the_watch_with_130_and_leaves_the_last_whole_page(tmp_path, cli, monkeypatch):
    run = live_run(tmp_path / "e")
    answers = iter([True, True])  # the start's notice, then the first page; Ctrl-C after

    def live(exps):
        answer = next(answers, None)
        if answer is None:
            raise KeyboardInterrupt
        return answer

    monkeypatch.setattr(watch, "running", live)
    result = cli("report", run, "--watch", "--every", "2")
    assert result.code == 130
    assert "interrupted" in result.err and result.out == ""
    assert REFRESH.findall((run / "report.html").read_text()) == ["2"]
    assert not list(tmp_path.rglob(".*.tmp"))


def test_the_timeline_has_one_bar_per_trial_from_its_first_start_to_its_last_result(tmp_path):
    (exp,) = results.load(live_run(tmp_path / "e"))
    fig, spans = timeline.trial_timeline(exp)
    assert [(s.trial_id, s.start, s.end, s.status) for s in spans] == [
        ("abcde_00000", 0.0, 4.0, "finished"),
        ("abcde_00001", 1.0, 7.0, "running or unfinished"),
        ("abcde_00002", 5.0, 10.0, "failed"),
        ("abcde_00003", 10.0, 12.0, "finished"),
    ]
    assert timeline.most_at_once(spans) == 2  # 00003 starts as 00002 ends
    assert fig is not None
    (bars,) = fig.axes[0].collections[:1]
    assert len(bars.get_segments()) == len(exp.trials)
    report.write([exp], tmp_path / "r.html", source=str(exp.folder))
    assert "e-timeline.png" in (tmp_path / "r.html").read_text()
    assert (tmp_path / "r_files" / "e-timeline.png").read_bytes().startswith(b"\x89PNG")


def test_a_long_trial_keeps_its_first_and_last_rows_in_the_history(tmp_path):
    run = tmp_path / "e"
    live_run(run)
    many = [
        json.dumps(
            {
                "trial_id": "abcde_00009",
                "training_iteration": i,
                "score": 0.0,
                "logged_at": 200.0 + i,
                "time_this_iter_s": 1.0,
            }
        )  # fmt: skip
        + "\n"
        for i in range(1, 2001)
    ]
    with (run / "results.jsonl").open("a") as f:
        f.writelines(many)
    (exp,) = results.load(run)
    (long,) = [s for s in timeline.spans(exp) if s.trial_id == "abcde_00009"]
    assert (long.start, long.end) == (200.0 - 100.0, 2200.0 - 100.0)


def test_the_page_rereads_the_run_it_read_first_and_says_which_once(tmp_path, monkeypatch, capsys):
    """A folder names its experiment's newest run: each rewrite read it again, said so again
    on stderr, and would have moved to a run started meanwhile."""
    live_run(tmp_path / "e")
    later = live_run(tmp_path / "e_2")
    rereads = []
    monkeypatch.setattr(watch, "watch", lambda exps, reread, write, every: rereads.append(reread))
    watch.page(str(tmp_path / "e"), str(tmp_path / "page.html"), every=10)
    assert capsys.readouterr().err.count("tune_app: reading") == 1
    live_run(tmp_path / "e_3")  # started while the page is kept
    (again,) = rereads[0](True)
    assert again.where == str(later) and "tune_app: reading" not in capsys.readouterr().err
