"""What every benchmark shares: a figure (a ratio of two things measured side by side, with its
target), running a command while measuring its wall time and peak memory, and the table."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


@dataclass(frozen=True)
class Figure:
    """One measured ratio: `value` = numerator / denominator, both measured in this run."""

    benchmark: str
    name: str
    value: float
    target: str  # e.g. "<= 1.15"; "" when the figure is reported without a target
    numerator: str  # what was measured, with its value and unit
    denominator: str
    note: str = ""
    # Where the value lies over repetitions (the lowest and highest ratio of paired repeats, or
    # a bootstrap interval): a target inside it is neither met nor missed, but not shown.
    spread: tuple[float, float] | None = None
    repeats: int = 1  # how many paired repetitions `value` is the median of

    @property
    def met(self) -> bool | None:
        """Whether the target holds: None without a target, or when the spread crosses it."""
        if not self.target:
            return None
        op, bound = self.target.split()
        ends = self.spread or (self.value, self.value)
        holds = [_holds(op, v, float(bound)) for v in (self.value, *ends)]
        return holds[0] if all(h == holds[0] for h in holds) else None

    @property
    def verdict(self) -> str:
        """The table's "met" column: yes, **no**, not shown (the spread crosses), or -."""
        met = self.met
        if met is None:
            return "not shown" if self.target else "-"
        return "yes" if met else "**no**"


REPEATS = 3  # paired repetitions behind every measured ratio (the floor)


@dataclass(frozen=True)
class Paired:
    """Two things measured in turn, A, B, A, B, ...: one ratio a/b per repetition, so slow
    spells of a shared machine fall on both sides of each ratio."""

    a: tuple[float, ...]
    b: tuple[float, ...]

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(x / y for x, y in zip(self.a, self.b, strict=True))

    @property
    def value(self) -> float:
        return median(self.ratios)

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.ratios), max(self.ratios))

    def figure(self, benchmark: str, name: str, target: str, a: str, b: str, **kw: Any) -> Figure:
        """The median ratio with its spread; `a` and `b` say what was measured, with `{}` for
        the median of each side (formatted by the caller's spec, e.g. `{:.2f} s`)."""
        return Figure(
            benchmark,
            name,
            self.value,
            target,
            a.format(median(self.a)),
            b.format(median(self.b)),
            spread=self.spread,
            repeats=len(self.a),
            **kw,
        )


def paired(
    measure_a: Callable[[], float], measure_b: Callable[[], float], repeats: int = REPEATS
) -> Paired:
    """Measure A then B, `repeats` times (a constant B, such as an ideal, costs nothing)."""
    a, b = [], []
    for _ in range(repeats):
        a.append(measure_a())
        b.append(measure_b())
    return Paired(tuple(a), tuple(b))


def _holds(op: str, value: float, bound: float) -> bool:
    return {
        "<=": value <= bound,
        "<": value < bound,
        ">=": value >= bound,
        ">": value > bound,
    }[op]


@dataclass
class Measured:
    """A finished command: its wall time, the peak memory of its own process, its output."""

    wall_s: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    extra: dict[str, Any] = field(default_factory=dict)


def measure(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Measured:
    """Run `cmd`, timing it and reading its peak RSS from the kernel: the process's own high
    water mark (VmHWM), polled while it runs. (wait4's ru_maxrss would be the largest of it and
    the children it waited for: a driver that stops its Ray waits for Ray's daemons.)"""
    with tempfile.TemporaryFile("w+") as o, tempfile.TemporaryFile("w+") as e:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=o, stderr=e)
        peak = _HighWater(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        peak.stop()
        o.seek(0)
        e.seek(0)
        measured = Measured(
            wall_s=wall,
            peak_rss_mb=(peak.kb or usage.ru_maxrss) / 1024,
            returncode=os.waitstatus_to_exitcode(status),
            stdout=o.read(),
            stderr=e.read(),
        )
    if measured.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited {measured.returncode}:\n{measured.stderr[-3000:]}"
        )
    return measured


class _HighWater:
    """A process's VmHWM (its peak resident memory, in kB), read every 50 ms until it exits."""

    def __init__(self, pid: int) -> None:
        self.pid, self.kb = pid, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.is_set():
            try:
                text = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in text.splitlines():
                if line.startswith("VmHWM:"):
                    self.kb = max(self.kb, int(line.split()[1]))
            self._done.wait(0.05)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def script(path: Path, cwd: Path, env: dict[str, str] | None = None) -> Measured:
    """A hand-written script; its Ray workers import `benchmarks` from the checkout. `env`
    adds to its environment."""
    return measure([PYTHON, str(path)], cwd, {"PYTHONPATH": str(ROOT), **(env or {})})


def sized_main(
    run: Any,
    doc: str | None,
    size: str,
    size_help: str,
    quick_help: str,
    choices: dict[str, tuple[tuple[str, ...], str]] | None = None,
) -> None:
    """`python -m benchmarks.NAME [--quick] [--SIZE N] [--repeats K] [--CHOICE C ...]`: one
    benchmark's table, `run(quick, size, repeats, **choices)`; `choices`: option -> (its
    values, the first the default; its help)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument(f"--{size}", type=int, help=size_help)
    parser.add_argument("--repeats", type=int, default=REPEATS, help="runs of each side, in turn")
    for name, (values, help_text) in (choices or {}).items():
        parser.add_argument(f"--{name}", choices=values, default=values[0], help=help_text)
    args = parser.parse_args()
    chosen = {name: getattr(args, name) for name in choices or {}}
    print(table(run(args.quick, getattr(args, size), args.repeats, **chosen)))


def tune_app(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Measured:
    return measure([PYTHON, "-m", "tune_app", *args], cwd, env)


def start_ray(cpus: int) -> None:
    """One local Ray for every run of a search benchmark; its workers import `benchmarks` from
    the checkout."""
    import ray

    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), path]))
    ray.init(
        address="local",
        num_cpus=cpus,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
    )


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


def table(figures: list[Figure]) -> str:
    """A Markdown table of the figures (also what the README shows)."""
    lines = [
        "| benchmark | figure | median (spread) | repeats | target | met | measured | against |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        value = f"{f.value:.3g}" + (f" ({f.spread[0]:.3g}-{f.spread[1]:.3g})" if f.spread else "")
        lines.append(
            f"| {f.benchmark} | {f.name} | {value} | {f.repeats} | {f.target or '-'} | "
            f"{f.verdict} | {f.numerator} | {f.denominator} |"
        )
    return "\n".join(lines)


def _finite(value: Any) -> Any:
    """JSON has no infinity: a ratio that is infinite (a search that never reached its goal in
    most runs) is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_json(path: Path, figures: list[Figure], quick: bool) -> None:
    data = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "quick": quick,
        "machine": machine(),
        "figures": [
            {**{k: _finite(v) for k, v in asdict(f).items()}, "met": f.met, "verdict": f.verdict}
            for f in figures
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")


def read_summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())


def read_results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def bench_main(run: Any, doc: str | None) -> None:
    """`python -m benchmarks.NAME [--quick]`: one benchmark's table."""
    import argparse

    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    print(table(run(parser.parse_args().quick)))
