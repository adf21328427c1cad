"""A write of the run's own files that fails (a full disk) is an error, not a crash: the hook
that failed stops the run as Ctrl-C does, what was written stays whole lines of JSON, Tune's
state is replaced whole or not at all, and the message names the file, the errno and how to go
on. No Ray instance: the run itself is in tests/test_full_disk.py."""

from __future__ import annotations

import errno
import json
import pickle
import shutil
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from tune_app import interrupts
from tune_app.callbacks import JsonlResults
from tune_app.errors import StorageError
from tune_app.ray_internals.uploads import upload_folder
from tune_app.rundir.files import append_line, write_all, write_text
from tune_app.rundir.location import RunLocation

ENOSPC = "No space left on device"


@pytest.mark.parametrize(
    ("error", "resume", "message"),
    [
        pytest.param(
            OSError(errno.ENOSPC, ENOSPC, "/mnt/x/e/results.jsonl"),
            "python -m tune_app resume /mnt/x/e",
            "/mnt/x/e/results.jsonl: No space left on device (errno 28); the run stopped with "
            "its state saved: free space, then python -m tune_app resume /mnt/x/e",
            id="full-disk",
        ),
        pytest.param(
            OSError(errno.EDQUOT, "Disk quota exceeded", "/home/me/r/e/finished.jsonl"),
            "python -m tune_app resume /home/me/r",
            "/home/me/r/e/finished.jsonl: Disk quota exceeded (errno 122); the run stopped with "
            "its state saved: free space or raise the quota, then "
            "python -m tune_app resume /home/me/r",
            id="quota",
        ),
        pytest.param(
            OSError(errno.EACCES, "Permission denied", "/r/e/run.json"),
            None,
            "/r/e/run.json: Permission denied (errno 13); nothing ran: make the folder writable, "
            "then run it again",
            id="nothing-ran",
        ),
        pytest.param(
            OSError(errno.EIO, "Input/output error"),
            "python -m tune_app resume /r/e",
            "Input/output error (errno 5); the run stopped with its state saved: fix the "
            "storage, then python -m tune_app resume /r/e",
            id="no-file-named",
        ),
        pytest.param(
            OSError(errno.ENOSPC, ENOSPC, "/r/e\nerror: forged/results.jsonl"),
            None,
            "/r/e\\nerror: forged/results.jsonl: No space left on device (errno 28); nothing ran: "
            "free space, then run it again",
            id="one-line",
        ),
    ],
)
def test_a_storage_error_is_one_line_naming_the_file_the_errno_and_what_to_do(
    error, resume, message
):
    err = StorageError(error).resumed_by(resume)
    assert str(err) == message
    assert err.exit_code == 74  # sysexits' EX_IOERR, beside 130/143 for an interruption
    back = pickle.loads(pickle.dumps(err))  # raised in an experiment's own Ray actor
    assert str(back) == message and back.error.errno == error.errno


@pytest.fixture
def tune_listening():
    """Tune's SIGINT handler as its loop installs it: a flag set, the old handler put back."""
    stops: list[int] = []

    def handler(signum, frame):
        stops.append(signum)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    saved = signal.signal(signal.SIGINT, handler)
    interrupts.forget_write_errors()
    yield stops
    signal.signal(signal.SIGINT, saved)
    interrupts.forget_write_errors()


def test_a_failed_write_in_tunes_loop_asks_tune_to_stop_once(tune_listening):
    @interrupts.stops_on_write_error
    def hook(path: str) -> str:
        raise OSError(errno.ENOSPC, ENOSPC, path)

    assert hook("/r/e/results.jsonl") is None  # nothing escapes into Tune
    assert hook("/r/e/finished.jsonl") is None  # a second SIGINT would be a KeyboardInterrupt
    assert tune_listening == [signal.SIGINT]
    failed = interrupts.write_error()
    assert failed is not None and failed.filename == "/r/e/results.jsonl"  # the first


def test_outside_tunes_loop_a_failed_write_is_recorded_without_a_signal():
    interrupts.forget_write_errors()
    # Python's own handler, as outside Tune's loop (an earlier in-process run in this session
    # may have left Tune's handler installed: Tune restores the previous one only on a signal).
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:

        @interrupts.stops_on_write_error
        def hook() -> None:
            raise OSError(errno.ENOSPC, ENOSPC, "/r/e/results.jsonl")

        hook()  # no KeyboardInterrupt
        assert interrupts.write_error() is not None
    finally:
        signal.signal(signal.SIGINT, saved)
        interrupts.forget_write_errors()


def _trial(trial_id, **config):
    return SimpleNamespace(
        trial_id=trial_id,
        config=config,
        last_result={"training_iteration": 1},
        run_metadata=SimpleNamespace(num_failures=0),
    )


def _torn_write(file, data):
    """A write that a full disk cuts short: half the line lands, then ENOSPC."""
    file.write(data[: len(data) // 2])
    raise OSError(errno.ENOSPC, ENOSPC, file.name)


def test_results_log_after_a_full_disk_ends_in_whole_lines_once_resumed(tmp_path, monkeypatch):
    interrupts.forget_write_errors()
    folder = RunLocation(tmp_path)
    log = JsonlResults(folder, "e")
    a, b = _trial("a", x=1), _trial("b", x=2)
    log.on_trial_result(0, [a, b], a, {"training_iteration": 1, "score": 1.0})
    monkeypatch.setattr("tune_app.callbacks.write_all", _torn_write)
    log.on_trial_result(0, [a, b], b, {"training_iteration": 1, "score": 2.0})  # no exception
    failed = interrupts.write_error()
    assert failed is not None and failed.filename == str(folder.results)
    monkeypatch.undo()
    log.on_trial_result(0, [a, b], a, {"training_iteration": 2, "score": 3.0})  # the run stops
    lines = folder.results.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["trial_id"] == "a"  # then one torn line
    assert pickle.loads(pickle.dumps(log))._failed is False  # a resumed run writes again

    resumed = JsonlResults(folder, "e")  # the next process: the torn line is cut
    resumed.on_trial_result(0, [a, b], b, {"training_iteration": 1, "score": 2.0})
    rows = [json.loads(line) for line in folder.results.read_text().splitlines()]
    assert [(r["trial_id"], r["training_iteration"]) for r in rows] == [("a", 1), ("b", 1)]
    interrupts.forget_write_errors()


def test_the_journal_of_ended_trials_cuts_a_torn_line_before_the_next(tmp_path):
    interrupts.forget_write_errors()
    folder = RunLocation(tmp_path)
    folder.finished.write_text('{"trial_id": "a", "status": "TERMINATED"}\n{"trial_id": "b", "st')
    JsonlResults(folder, "e").on_trial_complete(0, [], _trial("c"))
    rows = [json.loads(line) for line in folder.finished.read_text().splitlines()]
    assert [r["trial_id"] for r in rows] == ["a", "c"]
    assert interrupts.write_error() is None


def test_an_unbuffered_write_names_its_file_and_finishes_short_writes(tmp_path):
    with open("/dev/full", "ab", buffering=0) as full, pytest.raises(OSError) as failed:
        write_all(full, b'{"a": 1}\n')
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == "/dev/full"

    class Trickle:  # the kernel may take part of a write
        name = "trickle"
        data = b""

        def write(self, view):
            self.data += bytes(view[:3])
            return min(3, len(view))

    out = Trickle()
    write_all(out, b'{"trial_id": "a"}\n')  # type: ignore[arg-type]
    assert out.data == b'{"trial_id": "a"}\n'
    append_line(tmp_path / "j.jsonl", {"x": float("nan")})  # strict JSON, one line
    assert (tmp_path / "j.jsonl").read_text() == '{"x": null}\n'


def test_an_atomic_write_that_fails_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}\n')

    from tune_app.rundir import files

    def full(file, data):
        file.write(data[:5])
        raise OSError(errno.ENOSPC, ENOSPC)  # a failed write names no file

    monkeypatch.setattr(files, "write_all", full)
    with pytest.raises(OSError) as failed:
        write_text(target, '{"new": true}\n')
    monkeypatch.undo()
    assert failed.value.filename == str(target)  # the file meant, not its temporary
    assert target.read_text() == '{"old": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_tunes_files_copied_to_the_run_folder_are_replaced_whole_or_not_at_all(
    tmp_path, monkeypatch
):
    staging, run = tmp_path / "staging", tmp_path / "run"
    (staging / "trial_1").mkdir(parents=True)
    (staging / "experiment_state-x.json").write_text('{"trial_data": [1, 2]}')
    (staging / "trial_1" / "error.pkl").write_bytes(pickle.dumps(ValueError("boom")))
    (run / "trial_1").mkdir(parents=True)
    (run / "experiment_state-x.json").write_text('{"trial_data": [1]}')
    real_copy = shutil.copyfile

    def full(source, target):
        Path(target).write_bytes(Path(source).read_bytes()[:7])
        raise OSError(errno.ENOSPC, ENOSPC, str(target))

    monkeypatch.setattr(shutil, "copyfile", full)
    copied: dict = {}
    with pytest.raises(OSError):
        upload_folder(staging, run, copied)
    assert json.loads((run / "experiment_state-x.json").read_text()) == {"trial_data": [1]}
    assert sorted(p.name for p in run.rglob("*")) == ["experiment_state-x.json", "trial_1"]

    calls: list[str] = []
    monkeypatch.setattr(
        shutil, "copyfile", lambda s, t: calls.append(Path(s).name) or real_copy(s, t)
    )
    upload_folder(staging, run, copied)
    assert json.loads((run / "experiment_state-x.json").read_text()) == {"trial_data": [1, 2]}
    assert str(pickle.loads((run / "trial_1" / "error.pkl").read_bytes())) == "boom"
    upload_folder(staging, run, copied)  # nothing changed: nothing copied again
    (staging / "experiment_state-x.json").write_text('{"trial_data": [1, 2, 3]}')
    upload_folder(staging, run, copied)
    assert sorted(calls) == ["error.pkl", "experiment_state-x.json", "experiment_state-x.json"]
    assert json.loads((run / "experiment_state-x.json").read_text())["trial_data"] == [1, 2, 3]


@pytest.mark.parametrize(
    ("whole", "torn"),
    [
        pytest.param(3, 10, id="a short torn line"),
        pytest.param(2, 200_000, id="a torn line longer than a block read back"),
        pytest.param(0, 200_000, id="nothing whole: the file is emptied"),
    ],
)
def test_a_torn_tail_is_cut_at_the_last_whole_line_read_from_the_end(tmp_path, whole, torn):
    from tune_app.rundir.files import cut_torn_tail

    path = tmp_path / "results.jsonl"
    lines = [json.dumps({"n": n, "pad": "x" * 90_000}) + "\n" for n in range(whole)]
    path.write_text("".join(lines) + '{"n": ' + "9" * torn)
    cut_torn_tail(path)
    assert path.read_text() == "".join(lines)


def test_the_app_writes_its_files_not_what_a_link_in_their_place_names(tmp_path):
    """A link left where the app writes a file (its temporary file, a file it appends to) is
    replaced or refused, never written through."""
    from tune_app.rundir.files import append_line, new_file, write_text

    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    (tmp_path / "planted.tmp").symlink_to(target)
    with pytest.raises(FileExistsError):  # a temporary file is made, never opened
        new_file(tmp_path / "planted.tmp")
    (tmp_path / "results.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        append_line(tmp_path / "results.jsonl", {"trial_id": "a"})
    assert target.read_text() == "kept"
    (tmp_path / "spec.yaml").symlink_to(target)  # the file itself a link: the link is replaced
    write_text(tmp_path / "spec.yaml", "e: {}\n")
    assert not (tmp_path / "spec.yaml").is_symlink() and target.read_text() == "kept"


def test_writers_of_one_file_at_once_each_write_it_whole(tmp_path):
    """Two reports of one run at once shared one temporary name: one removed the other's
    temporary file (FileExistsError), or renamed it into place half-written."""
    from concurrent.futures import ThreadPoolExecutor

    from tune_app.rundir.files import write_text

    path = tmp_path / "report.html"
    texts = [f"{i}" * 100_000 for i in range(8)]

    def write(text):
        for _ in range(20):
            write_text(path, text)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, texts))  # raises what a writer raised
    assert path.read_text() in texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left
    longest = tmp_path / ("é" * 125 + ".html")  # 255 bytes: its temporary name is cut to fit
    write_text(longest, "x")
    assert longest.read_text() == "x"
