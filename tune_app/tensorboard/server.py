"""The TensorBoard server of `python -m tune_app tensorboard`: TensorBoard's own program on a
run's folder, on 127.0.0.1 and port 6006 or a free one it names, stopped by SIGTERM."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path
from typing import Any

from tune_app.errors import SpecError
from tune_app.rundir.location import RunLocation, given

DEFAULT_PORT = 6006  # TensorBoard's own: a bookmark or a forwarded port keeps working


def pick_port(host: str, port: int | None, default: int = DEFAULT_PORT) -> tuple[int, str | None]:
    """The port to serve on, and a note when it is not the one expected: `port` as asked (0: a
    free one; SpecError when it cannot be bound), else `default`, or a free one when `default`
    is taken (another TensorBoard serving), said in the note."""
    if port is not None:
        _check_address(host, port)
        return port, None
    try:
        _check_address(host, default)
    except SpecError:
        _check_address(host, 0)  # no port of this host can be bound (no such host): that error
        note = f"port {default} is in use (another TensorBoard?); serving on a free port instead"
        return 0, note + " (--port N picks one)"
    return default, None


def serve(folder: str | Path, host: str = "127.0.0.1", port: int | None = None) -> None:
    """Serve TensorBoard on a run's folder (or a storage folder of runs) until interrupted (Ctrl-C,
    or SIGTERM and SIGHUP, which the command line turns into Ctrl-C): on `port`, else on
    DEFAULT_PORT, or a free port when that is taken. A folder no run has written yet is served as
    well: TensorBoard finds each trial's folder as it starts."""
    if not host.strip():  # TensorBoard reads an empty host as every interface
        raise SpecError(
            "--host '' would serve on every network interface",
            suggestion="give 127.0.0.1 (the default), or 0.0.0.0 to serve on every one knowingly",
        )
    folder = Path(given(folder)).expanduser()
    if _not_written_yet(folder):  # served before the run: its trials show as they start
        runs: list[RunLocation] = []
        print(f"note: no run in {folder} yet; its trials show here as they start", file=sys.stderr)
    else:
        # A storage folder: every run, side by side; a run's folder: the run the readers read.
        runs = RunLocation.open(folder, every=True)
        if not all(r.local.parent == folder for r in runs):
            folder = runs[0].local
    port, moved = pick_port(host, port)
    if moved:
        print(f"note: {moved}", file=sys.stderr)
    from tensorboard import program

    made: list[Any] = []

    def make_server(app: Any, flags: Any) -> Any:
        made.append(program.WerkzeugServer(app, flags))
        return made[-1]

    board = program.TensorBoard(server_class=make_server)
    board.configure(logdir=str(folder), host=host, port=port)
    try:
        url = board.launch()  # serves on a daemon thread
    except program.TensorBoardServerException as err:
        raise SpecError(f"cannot serve on {host}:{port}: {err.msg}") from None
    if len(runs) > 1:
        print(
            f"note: {len(runs)} experiments; TensorBoard's HParams tab takes its columns from one "
            "of them, which names those of its spec's (give an experiment folder to compare its "
            "trials alone)",
            file=sys.stderr,
        )
    print(f"TensorBoard on {folder} at {url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        made[0].shutdown()
        made[0].server_close()


def _not_written_yet(folder: Path) -> bool:
    """A folder no run has written to yet: missing (its parent there) or empty."""
    if folder.is_dir():
        return not any(folder.iterdir())
    return not folder.exists() and folder.parent.is_dir()


def _check_address(host: str, port: int) -> None:
    """SpecError unless `host:port` can be bound; werkzeug would print the reason and exit 1."""
    if not 0 <= port <= 65535:
        raise SpecError(f"--port must be 0 to 65535, but got {port}", suggestion="0: a free one")
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug binds
            probe.bind(address)
    except OSError as err:
        raise SpecError(
            f"cannot serve on {host}:{port}: {err.strerror or err}",
            suggestion="use --host 127.0.0.1 (this machine only) and --port 0 (a free one)",
        ) from None
