"""Shared fixtures: one Ray instance for the session, and an in-process CLI runner."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tune_app.ray_internals.versions import bohb_takes_ranges

ROOT = Path(__file__).resolve().parent.parent
SEARCH_SPACES = ROOT / "search_spaces"
USER_MODULES = ROOT / "tests" / "user_modules"  # trainables and envs a user would write


def pytest_collection_modifyitems(items):
    """The tiers, marked from what each test does. A test using the session's Ray instance is
    marked `ray`. A test marked `e2e` runs the CLI end to end (in a process and a Ray of its own,
    or over every example, published RLlib file or tutorial): it is marked `ray` too (it starts
    Ray) and `slow`, the second tier, which README's `pytest` leaves out (pyproject's addopts)
    and `.ci/run` runs after it. `pytest -m "not ray"` runs the pure suite alone and starts no
    Ray: `own_runs_are_marked` fails a test that starts a run of its own unmarked."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.ray)
            item.add_marker(pytest.mark.slow)


# What starts a run, and so a Ray, of its own: `python -m tune_app run|resume|evaluate`, a Python
# program that calls tune_app's run, `ray start`.
_OWN_RUNS = ("run", "resume", "evaluate")


def starts_own_run(argv: list[str]) -> bool:
    """Whether a process of `argv` starts a tune_app run or a Ray of its own."""
    if "-m" in argv and argv[argv.index("-m") + 1 :][:1] == ["tune_app"]:
        rest = argv[argv.index("-m") + 2 :]
        return bool(rest) and rest[0] in _OWN_RUNS
    if "-c" in argv:
        code = " ".join(argv[argv.index("-c") + 1 :])
        return "tune_app.run(" in code or "ray.init(" in code
    return len(argv) > 1 and Path(argv[0]).name == "ray" and argv[1] == "start"


@pytest.fixture(autouse=True)
def own_runs_are_marked(request):
    """A test that starts a run or a Ray in a process of its own must be marked `e2e`, so the
    tiers stay honest: the first tier starts no Ray but the session's."""
    if request.node.get_closest_marker("e2e") is not None:
        yield
        return
    started: list[str] = []
    real = subprocess.Popen.__init__

    def watched(self, args, *rest, **kwargs):
        argv = [os.fsdecode(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
        if starts_own_run(argv):
            started.append(" ".join(argv[:8]))
        real(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = watched
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real
    if started:
        pytest.fail(f"starts a run of its own ({started[0]}): mark it @pytest.mark.e2e")


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for every test that runs trials (ray.init costs seconds)."""
    import ray

    os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    _start_ray()
    yield ray
    ray.shutdown()


def _start_ray() -> None:
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)


@pytest.fixture(autouse=True)
def ray_left_free(request):
    """After a test on the session's Ray: every CPU free again within seconds. A test that
    leaves CPUs held errors here, naming the placement groups and actors left, and the session's
    Ray is started anew, so the tests after it do not wait forever for CPUs."""
    yield
    if "ray_session" not in request.fixturenames:
        return
    import ray
    from ray.util.placement_group import PlacementGroup, placement_group_table

    if not ray.is_initialized():
        return
    total = ray.cluster_resources().get("CPU", 0)
    ends = time.monotonic() + 20
    while ray.available_resources().get("CPU", 0) < total and time.monotonic() < ends:
        time.sleep(0.2)
    if ray.available_resources().get("CPU", 0) >= total:
        return
    left = {k: v for k, v in placement_group_table().items() if v["state"] != "REMOVED"}
    for pg_id in left:
        ray.util.remove_placement_group(PlacementGroup(ray.PlacementGroupID.from_hex(pg_id)))
    free = ray.available_resources().get("CPU", 0)
    named = [f"{v['name'] or k} {v['bundles']} ({v['state']})" for k, v in left.items()]
    alive = [
        f"{a['ActorClassName']} pid {a['Pid']}"
        for a in ray._private.state.actors().values()
        if a["State"] != "DEAD"
    ]
    ray.shutdown()
    _start_ray()
    pytest.fail(
        f"{total - free:g} of {total:g} CPUs still held 20 s after the test; "
        f"placement groups left (now removed): {named}; actors not dead: {alive}"
    )


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run `tune_app` in-process: `cli("validate", path)` -> CliResult(code, out, err)."""
    from tune_app.cli import main

    def invoke(*args: str) -> CliResult:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return invoke


def refused(result: CliResult, *words: str, file: object = None, path: str | None = None) -> str:
    """`result` is a refusal: exit 2, one line on stderr and no traceback, the line beginning
    `error: FILE: PATH: ` (as far as they are given) and holding every word. Returns the line."""
    lines = result.err.strip().splitlines()
    assert result.code == 2 and len(lines) == 1 and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    prefix = "error: " + "".join(f"{part}: " for part in (file, path) if part)
    assert lines[0].startswith(prefix), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def write_spec(tmp_path):
    """Write YAML text to a spec file in a fresh folder and return its path."""

    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def results_of(folder: Path) -> list[dict]:
    """The rows of `folder`/results.jsonl, in order."""
    return [json.loads(line) for line in (Path(folder) / "results.jsonl").read_text().splitlines()]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def user_module(name: str, folder: Path, as_name: str | None = None) -> Path:
    """Copy tests/user_modules/`name` into `folder` (as `as_name`), beside a spec that names it."""
    target = Path(folder) / (as_name or name)
    shutil.copy(USER_MODULES / name, target)
    return target


# A BOHB search of numeric ranges: refused at validate on Ray 2.55 with ConfigSpace 1.x
# (tune_app.ray_internals.versions.bohb_takes_ranges), so its tests run from Ray 2.56 on.
BOHB_RANGES = pytest.mark.skipif(
    not bohb_takes_ranges(), reason="this Ray's BOHB cannot search numeric ranges (Ray 2.55)"
)
