"""A trial's TensorBoard events file, written by the driver in TensorBoard's own format (TFRecord
framing of its Event protos; no TensorFlow, torch or tensorboardX imported), and read back."""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

import google_crc32c

FLUSH_S = 1.0  # how late an event may reach the disk (Tune's writers take 30 s)
_CRC_MASK = 0xA282EAD8  # TFRecord's mask of a CRC-32C, TensorFlow's own constant


def record(data: bytes) -> bytes:
    """`data` framed as a TFRecord, as TensorBoard's RecordWriter frames it: its length (u64),
    the length's masked CRC-32C, the data, the data's masked CRC-32C (little-endian). The CRC
    is google-crc32c's (C, 0.2 us a result): TensorBoard's own is pure Python (21 us), and
    importing it imports `tensorboard.summary`, with boto3 where installed (10 MB)."""
    header = struct.pack("<Q", len(data))
    return b"".join(
        (header, _masked(google_crc32c.value(header)), data, _masked(google_crc32c.value(data)))
    )


def _masked(crc: int) -> bytes:
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + _CRC_MASK) & 0xFFFFFFFF)


def ended_in_events(folder: Path) -> bool:
    """Whether the trial's newest events file records its end (HParams' session end)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    from tune_app.tensorboard.hparams import SESSION_END_INFO_TAG

    files = sorted(folder.glob("events.out.tfevents.*"), key=lambda f: f.stat().st_mtime_ns)
    if not files:
        return False
    events = EventFileLoader(str(files[-1])).Load()
    return any(v.tag == SESSION_END_INFO_TAG for event in events for v in event.summary.value)


class EventWriter:
    """A trial's events file in TensorBoard's format (`record`): scalars as
    `simple_value`s, as TensorBoard and tensorboardX write them. Written in the driver's own
    thread, with no writer thread per trial (a search of many short trials starts a writer per
    trial); `TrialBoard.on_step_end` flushes what is older than FLUSH_S."""

    _made = itertools.count()

    def __init__(self, logdir: str) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        Path(logdir).mkdir(parents=True, exist_ok=True)
        # TensorBoard's own naming: time, host, process, a number unique in the process. Its
        # readers take a folder's files in the order of their names, so the number is padded: a
        # trial's tenth file of one second must sort after its ninth.
        name = (
            f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
            f"{os.getpid()}.{next(self._made):08d}"
        )
        self._file = open(Path(logdir) / name, "wb")  # noqa: SIM115 - closed by close()
        self._unflushed_since: float | None = None
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))

    def add_scalars(self, values: dict[str, float], global_step: int | None = None) -> None:
        """Scalars of one step in one event (TensorBoard reads each value of a summary under
        its own tag); nothing is written for none."""
        from tensorboard.compat.proto.summary_pb2 import Summary

        if values:
            summary = Summary(
                value=[Summary.Value(tag=t, simple_value=v) for t, v in values.items()]
            )
            self.add_summary(summary, global_step)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        event = Event(wall_time=time.time(), summary=summary)
        if global_step is not None:
            event.step = int(global_step)
        self._write(event)

    def restart(self, step: int) -> None:
        """A session (re)start at `step`: TensorBoard drops the run's events at `step` and after
        that it read before this one (SessionLog.START, its restart rule)."""
        from tensorboard.compat.proto.event_pb2 import Event, SessionLog

        self._write(
            Event(
                wall_time=time.time(),
                step=int(step),
                session_log=SessionLog(status=SessionLog.START),
            )
        )

    def _write(self, event: Any) -> None:
        self._file.write(record(event.SerializeToString()))
        if self._unflushed_since is None:
            self._unflushed_since = time.monotonic()

    def flush_if_due(self) -> None:
        since = self._unflushed_since
        if since is not None and time.monotonic() - since >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()
        self._unflushed_since = None

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        self._unflushed_since = None
