"""LCBench through YAHPO Gym's ONNX surrogate: learning curves of MLPs on OpenML tasks, in ms.

LCBench (Zimmer et al., 2021) trained 2,000 MLP configurations for 52 epochs on 35 OpenML tasks;
YAHPO Gym (Pfisterer et al., 2022) fitted a 2 MB ONNX model to those curves. A trial evaluates
the model once, for all 52 epochs of its configuration in one batch, then reports one epoch per
result: `val_accuracy` (percent) and `time` (the surrogate's training seconds so far). The
epoch goes through Tune checkpoints, so HyperBand can pause a trial and PBT copy one.

The model is read from the config's `data` folder, else from `../shared/data/lcbench` beside the
project when present, else downloaded once (its sha256 checked) into the user's cache. Needs
`onnxruntime` (the `bench` extra).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tune_app.contract import Knob, TrainableInfo

EPOCHS = 52
# The surrogate's inputs after the epoch, in its order, with their ranges and scales (LCBench's
# config_space.json): (low, high, log, integer).
SPACE: dict[str, tuple[float, float, bool, bool]] = {
    "batch_size": (16, 512, True, True),
    "learning_rate": (1e-4, 0.1, True, False),
    "momentum": (0.1, 0.99, False, False),
    "weight_decay": (1e-5, 0.1, False, False),
    "num_layers": (1, 5, False, True),
    "max_units": (64, 1024, True, True),
    "max_dropout": (0.0, 1.0, False, False),
}
DEFAULTS = {  # the data README's checked example
    "batch_size": 64,
    "learning_rate": 0.01,
    "momentum": 0.9,
    "weight_decay": 0.001,
    "num_layers": 3,
    "max_units": 256,
    "max_dropout": 0.2,
}
OUTPUTS = ("time", "val_accuracy")  # the first two of the model's six outputs
TASKS = ("167168", "189873", "189906")  # YAHPO-SO's LCBench instances
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "lcbench"
COMMIT = "efdab9072f63bd680396cd4b78b927c4a0caaad3"  # slds-lmu/yahpo_data
ADDRESS = f"https://github.com/slds-lmu/yahpo_data/raw/{COMMIT}/lcbench/"
FILES = {  # what is read, with its sha256
    "model.onnx": "b45c0d85ae39abf8820c8bea5ac82f415763afcbaf3b725e36af452b09cb6dcd",
    "encoding.json": "d8af928f412bbeb07e58ecd69877fcab35fbc595333d1c1c3f76120d2f2508da",
}
STATE = "epoch.json"  # in a checkpoint


class DataError(RuntimeError):
    """The surrogate's files are missing, damaged, or could not be downloaded."""


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tune_app" / "lcbench" / COMMIT


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def download(folder: Path, address: str = ADDRESS) -> Path:
    """The surrogate's files fetched into `folder`, each checked against its sha256 before it
    takes its name (a broken download never looks like data)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, digest in FILES.items():
        path = folder / name
        if path.exists() and _sha256(path) == digest:
            continue
        partial = path.with_suffix(path.suffix + ".part")
        try:
            with urllib.request.urlopen(address + name, timeout=60) as response:
                partial.write_bytes(response.read())
        except (urllib.error.URLError, OSError) as err:
            raise DataError(
                f"LCBench surrogate: no {name} in {SHARED} and {address + name} could not be "
                f"downloaded ({err}); pass its folder as config 'data' (or --data)"
            ) from None
        if _sha256(partial) != digest:
            partial.unlink()
            raise DataError(f"LCBench surrogate: {address + name} does not match its sha256")
        partial.replace(path)
    return folder


def locate(data: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the surrogate: `data`, else the shared copy, else the user's cache
    (downloading into it the first time)."""
    if data:
        folder = Path(data).expanduser()
        missing = [name for name in FILES if not (folder / name).is_file()]
        if missing:
            raise DataError(f"LCBench surrogate: {folder} lacks {', '.join(missing)}")
        return folder
    if all((SHARED / name).is_file() for name in FILES):
        return SHARED
    return download(cache_folder())


@dataclass(frozen=True)
class Surrogate:
    """The ONNX model and the task codes it takes."""

    session: Any  # onnxruntime.InferenceSession
    codes: dict[str, int]

    def curves(self, task: str, configs: Sequence[dict[str, Any]], epochs: Sequence[int]) -> Any:
        """Outputs `OUTPUTS` for every config at every epoch, in one evaluation: an array of
        shape [len(configs), len(epochs), 2]."""
        if task not in self.codes or task == "#na#":
            raise ValueError(f"LCBench has no OpenML task {task!r}; tasks: {sorted(self.codes)}")
        rows = np.array(
            [[e, *(float(c[k]) for k in SPACE)] for c in configs for e in epochs], np.float32
        )
        cat = np.full((len(rows), 1), self.codes[task], np.int32)
        out = self.session.run(None, {"x_cat": cat, "x_cont": rows})[0]
        return out[:, : len(OUTPUTS)].reshape(len(configs), len(epochs), len(OUTPUTS))


@cache
def surrogate(folder: str) -> Surrogate:
    """The model of `folder`, loaded once per process, on one thread (trials run side by side)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(Path(folder) / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    codes = json.loads((Path(folder) / "encoding.json").read_text())["OpenML_task_id"]
    return Surrogate(session, codes)


def hyperparameters(config: dict[str, Any]) -> dict[str, float]:
    """The 7 hyperparameters from a config (defaults for missing ones), each checked against
    LCBench's range: the surrogate extrapolates silently outside it."""
    found = {}
    for key, (low, high, _, integer) in SPACE.items():
        value = config.get(key, DEFAULTS[key])
        if not low <= value <= high:
            raise ValueError(f"LCBench's {key} must lie in [{low:g}, {high:g}], got {value}")
        found[key] = round(value) if integer else float(value)
    return found


def curve(config: dict[str, Any]) -> Any:
    """The trial's whole curve: [epoch - 1, (time, val_accuracy)] for epochs 1..52."""
    model = surrogate(str(locate(config.get("data"))))
    task = str(config.get("task", TASKS[0]))
    return model.curves(task, [hyperparameters(config)], range(1, EPOCHS + 1))[0]


def run_epochs(config: dict[str, Any], before: Callable[[int, float], None] | None = None) -> None:
    """Report the trial's epochs from where its checkpoint left off, calling `before(epoch,
    val_accuracy)` ahead of each report (the last report may never return: Tune stops a trial
    while it waits there)."""
    from ray import tune

    values = curve(config)
    start = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            start = json.loads((Path(folder) / STATE).read_text())["epoch"]
    for epoch in range(start + 1, EPOCHS + 1):
        spent, accuracy = (float(v) for v in values[epoch - 1])
        metrics = {"val_accuracy": accuracy, "time": spent, "epoch": epoch}
        if before is not None:
            before(epoch, accuracy)
        if config.get("checkpoint", True):
            with tempfile.TemporaryDirectory() as folder:
                (Path(folder) / STATE).write_text(json.dumps({"epoch": epoch}))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
        else:
            tune.report(metrics)


def lcbench(config: dict[str, Any]) -> None:
    """The Tune function trainable: one LCBench epoch per result, val_accuracy and time."""
    run_epochs(config)


INFO = TrainableInfo(
    name="lcbench",
    fn=lcbench,
    doc="LCBench MLP learning curves (YAHPO Gym's ONNX surrogate): val_accuracy per epoch",
    metric="val_accuracy",
    mode="max",
    metrics=("val_accuracy", "time", "epoch"),
    knobs=(
        Knob("task", str, TASKS[0], f"OpenML task id (YAHPO-SO's: {', '.join(TASKS)})"),
        Knob("batch_size", int, 64, "batch size, 16-512 (log)"),
        Knob("learning_rate", float, 0.01, "SGD step size, 1e-4-0.1 (log)"),
        Knob("momentum", float, 0.9, "SGD momentum, 0.1-0.99"),
        Knob("weight_decay", float, 0.001, "weight decay, 1e-5-0.1"),
        Knob("num_layers", int, 3, "hidden layers, 1-5"),
        Knob("max_units", int, 256, "units of the widest layer, 64-1024 (log)"),
        Knob("max_dropout", float, 0.2, "dropout of the widest layer, 0-1"),
        Knob("data", str, "", "folder with model.onnx and encoding.json ('': found or fetched)"),
        Knob("checkpoint", bool, True, "report a checkpoint per epoch (for HyperBand and PBT)"),
    ),
    smoke={},
    checkpoints=True,
    packages=("onnxruntime",),
)
