"""What the tests that run a small grid in a process of their own (as a user's run is: signals,
a lost head, a full disk, S3, resume) share: its spec, the user modules it runs, the process,
the rows its results.jsonl holds, and the GCS server the process started for its Ray."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.conftest import results_of, user_module


def grid_spec(
    run: str = "nodes:train", xs: Sequence[int] = (1, 2, 3), steps: int = 5, sleep: float = 1.0
) -> str:
    """An experiment `e` of `run` (`nodes:train` reports and checkpoints each step) over a grid
    of `x`, each trial `steps` steps of `sleep` seconds, ranked by `score`."""
    return f"""
metric: score
mode: max
experiments:
  e:
    run: {run}
    config:
      x: {{grid_search: {list(xs)}}}
      steps: {steps}
      sleep: {sleep}
"""


def with_nodes(folder: Path, spec: str | None = None) -> Path:
    """`nodes.py` and its `helper.py` copied into `folder`, and `spec` (if given) written there
    as spec.yaml, whose path is returned."""
    for name in ("nodes.py", "helper.py"):
        user_module(name, folder)
    if spec is not None:
        (folder / "spec.yaml").write_text(spec)
    return folder / "spec.yaml"


def started(
    *args: object,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    quiet: bool = True,
    **popen: Any,
) -> subprocess.Popen:
    """`python -m tune_app ARGS [-q]` in a session of its own (its own process group, which a
    test signals alone), with `env` (None: this process's) and any other Popen arguments."""
    return subprocess.Popen(
        [sys.executable, "-m", "tune_app", *map(str, args), *(["-q"] if quiet else [])],
        cwd=cwd,
        env=None if env is None else dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def wait_for(
    condition: Callable[[], object], proc: subprocess.Popen, seconds: float = 120, every=0.1
) -> None:
    """Wait until `condition()` holds; fail if `proc` ends first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def rows(folder: Path) -> list[tuple[str, int]]:
    """results.jsonl's rows in `folder`, as (trial id, training_iteration), in order."""
    return [(r["trial_id"], r["training_iteration"]) for r in results_of(folder)]


def gcs_of(pid: int) -> int | None:
    """The GCS server the process `pid` started for its local Ray (a child of it), if it has."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in children:
        try:
            if "gcs_server" in Path(f"/proc/{child}/cmdline").read_text():
                return int(child)
        except OSError:
            continue
    return None
