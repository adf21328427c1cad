"""SIGTERM, SIGINT and SIGHUP end a run as Ctrl-C does, at any moment (before Ray starts, while
it starts, while trials run, while the summary is written; and in a process that began with
SIGINT ignored, as `cmd &` in a script starts it): the state is saved, the summary is marked
interrupted, one line says how to resume, and the exit code is 128 + the signal's number. The
signal goes to the whole process group, as `timeout` and Slurm send it. And the Ray a run
starts for itself listens on loopback only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.runs import gcs_of, grid_spec, rows, started, wait_for, with_nodes
from tune_app import api, interrupts

CODES = [
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    pytest.param(signal.SIGINT, 130, id="SIGINT"),
    pytest.param(signal.SIGHUP, 129, id="SIGHUP"),
]
ray_e2e = [pytest.mark.e2e, pytest.mark.ray]


def _start(tmp_path: Path, *args: str, sigint_ignored: bool = False) -> subprocess.Popen:
    with_nodes(tmp_path, grid_spec(sleep=0.5))
    # As a shell starts `cmd &` without job control: SIGINT ignored, which exec keeps.
    preexec_fn = _ignore_sigint if sigint_ignored else None
    return started(*args, cwd=tmp_path, quiet=False, preexec_fn=preexec_fn)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _ray_starting(proc: subprocess.Popen) -> bool:
    """Ray's GCS, started by the run's process, is up: `ray.init` has begun, not yet returned
    (it waits for the raylet and connects the driver for a second or more after)."""
    return gcs_of(proc.pid) is not None


def _last_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert lines, "nothing on stderr"
    return lines[-1]


@pytest.mark.parametrize(
    ("sig", "code", "sigint_ignored"),
    [
        # SIGHUP takes SIGTERM's path to Tune's handler (`_forward`), checked without Ray.
        pytest.param(signal.SIGTERM, 143, False, id="SIGTERM"),
        pytest.param(signal.SIGINT, 130, False, id="SIGINT"),  # Tune's own handler
        pytest.param(signal.SIGTERM, 143, True, id="SIGTERM-sigint-ignored"),
    ],
)
@pytest.mark.e2e
@pytest.mark.ray
def test_a_signal_while_trials_run_saves_the_state_and_resume_finishes(
    tmp_path, sig, code, sigint_ignored
):
    folder = tmp_path / "out" / "e"
    proc = _start(
        tmp_path, "run", "spec.yaml", "--storage-path", "out", sigint_ignored=sigint_ignored
    )
    results = folder / "results.jsonl"
    wait_for(lambda: results.exists() and len(results.read_text().splitlines()) >= 2, proc)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "SIGTERM received" not in err
    assert _last_line(err) == (
        f"interrupted ({sig.name}); the state is saved. "
        f"Continue with: python -m tune_app resume {folder}"
    )
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert not (tmp_path / "out" / ".e.lock").exists()  # the folder's lock went with the run
    # A trial still pending never reported: its config is the one Tune's saved state holds.
    assert sorted(t["config"]["x"] for t in summary["trials"]) == [1, 2, 3]
    (read,) = api.read(folder)
    assert sorted(t.params["x"] for t in read.summary.trials) == [1, 2, 3]
    before = rows(folder)
    resumed = subprocess.run(
        [sys.executable, "-m", "tune_app", "resume", str(folder), "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = rows(folder)
    # Nothing lost or doubled, each trial's rows in order. A row logged after the trial's last
    # checkpoint Tune saved (the signal fell between the two) is run again from that checkpoint,
    # and the results file keeps the new run of it, at the end: so rows are compared as a set.
    assert set(before) <= set(after) and len(after) == len(set(after)) == 15
    for trial in {t for t, _ in after}:
        steps = [i for t, i in after if t == trial]
        assert steps == list(range(1, 6)), (trial, steps)
    final = json.loads((folder / "summary.json").read_text())
    assert final["interrupted"] is False and final["counts"] == {"TERMINATED": 3}


@pytest.mark.parametrize(
    ("sig", "code", "moment", "sigint_ignored"),
    # One process per moment, the signals taking turns: each signal's exit code and the
    # handlers' every path are the Ray-free tests' below (`_child`), across all three signals.
    [
        pytest.param(signal.SIGTERM, 143, "before-ray", False, id="before-ray-SIGTERM"),
        pytest.param(signal.SIGINT, 130, "ray-starting", False, id="ray-starting-SIGINT"),
        pytest.param(signal.SIGHUP, 129, "before-ray", True, id="before-ray-sigint-ignored-SIGHUP"),
        pytest.param(
            signal.SIGTERM, 143, "ray-starting", True, id="ray-starting-sigint-ignored-SIGTERM"
        ),
    ],
)
@pytest.mark.e2e
@pytest.mark.ray
def test_a_signal_before_the_trials_is_an_interruption(tmp_path, sig, code, moment, sigint_ignored):
    proc = _start(
        tmp_path, "run", "spec.yaml", "--storage-path", "out", sigint_ignored=sigint_ignored
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("tune_app: starting")  # printed before Ray starts
    if moment == "ray-starting":
        wait_for(lambda: _ray_starting(proc), proc)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "SIGTERM received" not in err, err
    assert _last_line(err).startswith(f"interrupted ({sig.name})"), err
    folder = tmp_path / "out" / "e"
    if folder.exists():  # the run had begun: resumable
        assert _last_line(err).endswith(f"Continue with: python -m tune_app resume {folder}")
        assert (folder / "run.json").exists()
    else:
        assert _last_line(err).endswith("nothing was written"), err


@pytest.mark.e2e
@pytest.mark.ray
def test_sigterm_at_any_moment_of_the_start_up_is_an_interruption(tmp_path):
    """SIGTERM at moments spread over the start-up (imports, the plan, Ray's forks of its
    daemons and workers, the first trials): 143 and one line every time, never a run that went
    on to its end (a KeyboardInterrupt raised in an at-fork hook was dropped)."""
    with_nodes(tmp_path, grid_spec(sleep=0.5))
    ended = []
    for delay in [0.3 * n for n in range(14)]:  # 0 to 3.9 s after the first line
        proc = started(
            "run", "spec.yaml", "--storage-path", f"out{delay:.1f}", cwd=tmp_path, quiet=False
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # "tune_app: starting": printed before Ray starts
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        ended.append((delay, proc.returncode, _last_line(err)))
    wrong = [e for e in ended if e[1] != 143 or not e[2].startswith("interrupted (SIGTERM)")]
    assert not wrong, wrong


LISTENING = """
import json, os, sys
import ray
from tune_app import api, cluster

def listening(pids):
    inodes = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes[link[8:-1]] = pid
        except OSError:
            pass
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                found.append(parts[1].split(":")[0])
    return found

def tree(pid):
    out = [pid]
    for p in out:
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                out += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    return out

def commands(pids):
    out = []
    for pid in pids:
        try:
            out.append(open(f"/proc/{pid}/cmdline").read().replace("\\0", " "))
        except OSError:
            pass
    return out

plan = api.validate(sys.argv[1])
with cluster.ray_for(plan, None, int(sys.argv[2]) if len(sys.argv) > 2 else 0):
    ray.get(ray.remote(lambda: 1).remote())  # a worker too
    print(" ".join(listening(tree(os.getpid()))))
    print(json.dumps(commands(tree(os.getpid()))))
"""
# 127.0.0.1 as /proc/net/tcp writes it, and as an IPv4-mapped IPv6 address (tcp6).
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


@pytest.mark.e2e
@pytest.mark.ray
def test_the_local_ray_listens_on_loopback_only(tmp_path):
    with_nodes(tmp_path, grid_spec(sleep=0.5))
    out = subprocess.run(
        [sys.executable, "-c", LISTENING, str(tmp_path / "spec.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    addresses = out.stdout.splitlines()[0].split()
    assert len(addresses) >= 4, out  # the GCS, the raylet, the driver's and a worker's servers
    assert set(addresses) <= LOOPBACK, addresses


# The Python daemons a local Ray starts that a run has no use for (`lean_local_node`).
UNUSED_DAEMONS = ("autoscaler/_private/monitor.py", "dashboard/dashboard.py", "log_monitor.py")


@pytest.mark.e2e
@pytest.mark.ray
@pytest.mark.parametrize("verbosity", [0, 2])
def test_the_local_ray_starts_no_daemon_a_run_has_no_use_for(tmp_path, verbosity):
    """No autoscaler monitor and no API server; the log monitor only where workers' output
    goes to the driver (-v). Ray's own processes are there: the run works on them."""
    with_nodes(tmp_path, grid_spec(sleep=0.5))
    out = subprocess.run(
        [sys.executable, "-c", LISTENING, str(tmp_path / "spec.yaml"), str(verbosity)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    commands = json.loads(out.stdout.splitlines()[1])
    started = {d for d in UNUSED_DAEMONS if any(d in c for c in commands)}
    assert started == ({"log_monitor.py"} if verbosity >= 2 else set()), commands
    assert any("gcs_server" in c for c in commands) and any("raylet" in c for c in commands)


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        preexec_fn=_ignore_sigint,
    )  # fmt: skip


DEFERRED = """
import os, signal, sys
from tune_app import interrupts
written = []
try:
    with interrupts.as_interrupts():
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIG{name})
            written.append("summary")  # the signal waits for this
        written.append("after")
except KeyboardInterrupt:
    print(",".join(written), interrupts.exit_code(), interrupts.received())
"""


@pytest.mark.parametrize(("sig", "code"), CODES)
def test_a_signal_while_the_summary_is_written_waits_for_it(sig, code):
    out = _child(DEFERRED.format(name=sig.name[3:]))
    assert out.stdout.split()[:2] == ["summary", str(code)], out


IGNORED_AT_START = """
import os, signal, time
from tune_app import interrupts
assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
try:
    with interrupts.as_interrupts():
        os.kill(os.getpid(), signal.SIG{name})
        time.sleep(5)
        print("ran on")
except KeyboardInterrupt:
    print("stopped", interrupts.exit_code())
"""


@pytest.mark.parametrize(("sig", "code"), CODES)
def test_a_process_that_began_with_sigint_ignored_still_stops(sig, code):
    out = _child(IGNORED_AT_START.format(name=sig.name[3:]))
    assert out.stdout.split() == ["stopped", str(code)], out


def test_a_signal_is_handed_to_the_handler_of_ctrl_c_in_place():
    """Tune's handler while its loop runs: called (a graceful stop), not a KeyboardInterrupt."""
    seen = []
    with interrupts.as_interrupts():
        saved = signal.signal(signal.SIGINT, lambda s, f: seen.append(s))
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)  # the handler runs at the next bytecode; sleep is interrupted
        finally:
            signal.signal(signal.SIGINT, saved)
    assert seen == [signal.SIGINT]
    assert interrupts.exit_code() == 143 and interrupts.received() == "SIGTERM"


DROPPED = """
import gc, os, signal, sys, time, weakref
from tune_app import interrupts

def signalled():  # the signal arrives while Python runs code it cannot raise out of
    os.kill(os.getpid(), signal.SIG{name})
    time.sleep(0.2)

class Held:
    def __del__(self):
        signalled()

def in_a_finalizer():
    Held()

def in_a_weakref_callback():
    held = Held.__new__(Held)
    Held.__del__ = lambda self: None
    ref = weakref.ref(held, lambda r: signalled())
    del held

def in_an_at_fork_hook():  # as logging's own hook, in the parent after each of Ray's forks
    os.register_at_fork(after_in_parent=signalled)
    if os.fork() == 0:
        os._exit(0)
    os.wait()

try:
    with interrupts.as_interrupts():
        {where}()
        for _ in range(100):  # the run going on
            time.sleep(0.02)
        print("ran on")
except KeyboardInterrupt:
    print("stopped", interrupts.exit_code())
"""


@pytest.mark.parametrize(("sig", "code"), CODES)
@pytest.mark.parametrize("where", ["in_a_finalizer", "in_a_weakref_callback", "in_an_at_fork_hook"])
def test_a_signal_python_drops_is_delivered_again(sig, code, where):
    """Python prints and drops an exception raised in a finalizer, a weakref callback or an
    at-fork hook ("Exception ignored in ..."): the interrupt a signal raised there is delivered
    again, and the run stops."""
    out = _child(DROPPED.format(name=sig.name[3:], where=where))
    assert out.stdout.split() == ["stopped", str(code)], out
    assert "Exception ignored" not in out.stderr, out.stderr
