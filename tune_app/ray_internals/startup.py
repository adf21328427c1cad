"""Starting a local Ray or joining one, and Tune's trial actors on Ray's prestarted workers.

Each helper patches one or two private Ray symbols (listed in `tune_app.ray_internals`), and
falls back to Ray's own behaviour when a symbol is not there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from typing import Any

import ray

from tune_app.ray_internals.replacing import replaced

# What Tune gives each trial actor as its runtime env (ray.tune.execution.class_cache, checked
# once Tune is imported): a local Ray's workers inherit it instead.
TUNE_TRIAL_ENV = {"PL_DISABLE_FORK": "1"}


@contextlib.contextmanager
def trials_on_prestarted_workers() -> Iterator[None]:
    """Let trial actors start in the workers a local Ray starts with its node.

    Tune gives every trial actor a runtime env of a few environment variables (PL_DISABLE_FORK,
    and AWS keys or Train's settings where the driver has them). No worker Ray prestarted has
    that env, so each trial waited for a fresh worker process: 1.5-2 s before the first result
    on 2 cores. A local Ray's workers inherit the driver's environment, where `_ray_for` set
    Tune's variables before starting Ray: so, while this holds, Tune's actors ask for no runtime
    env of their own. (Also in an experiment's own task: workers inherit the same environment.)
    A patch: Tune has no option for its trial actors' runtime env, and the public route does
    not serve: with the same variables as the job's runtime env (`ray.init(runtime_env=...)`),
    an actor asking for them still started a fresh worker (its pid none of the node's
    prestarted ones; Ray prestarts them with no runtime env), as one asking for them without
    it did, while one asking for none landed on a prestarted worker. Its worth
    (`python -m benchmarks.prestarted --runs 7`, 2026-11-30, 2 cores at load 1.1-2.0): first
    result, medians 3.89 s with it and 4.37 s without; grid.yaml --smoke, 4.15 s and 5.51 s
    (6 of 7 pairs faster with it, by 1.3 s in the median pair)."""
    from ray.tune.execution import class_cache

    if not class_cache.DEFAULT_ENV_VARS.items() <= os.environ.items():
        yield  # Tune now sets more than TUNE_TRIAL_ENV: its actors keep their runtime env
        return
    with (
        replaced(class_cache, "DEFAULT_ENV_VARS", {}),
        replaced(class_cache, "ENV_VARS_TO_PROPAGATE", set()),
    ):
        yield


@contextlib.contextmanager
def daemons_in_own_session() -> Iterator[None]:
    """Start a local Ray's processes (GCS, raylet and the workers they start) in a session of
    their own, so a signal sent to the driver's process group reaches the driver alone.

    `timeout` and Slurm signal the whole process group, and a closed terminal hangs up its
    session: Ray's daemons died with the driver's SIGTERM or SIGHUP (Ray blocks only SIGINT in
    them), and the driver, stopping the run as Ctrl-C does, then lost its GCS ("Failed to
    connect to GCS within 60 seconds") and saved nothing. They still end with the driver:
    `ray.shutdown` stops them, and Ray ties them to the driver's life where the kernel can."""
    services: Any = getattr(ray._private, "services", None)
    original = getattr(services, "ConsolePopen", None)
    if original is None or sys.platform == "win32":
        yield
        return

    class InOwnSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    with replaced(services, "ConsolePopen", InOwnSession):
        yield


def recorded_cluster() -> str | None:
    """The HOST:PORT `ray.init(address="auto")` joins: RAY_ADDRESS, else the cluster `ray start`
    last recorded in Ray's temp folder; None where none is. Ray's own lookup
    (`services.canonicalize_bootstrap_address`), so the app knocks where Ray would wait, for
    minutes, on a head that is gone."""
    services: Any = getattr(ray._private, "services", None)
    try:
        return services.canonicalize_bootstrap_address("auto")
    except Exception:  # none recorded (ConnectionError), or a lookup this Ray lacks
        return None


@contextlib.contextmanager
def node_on_loopback() -> Iterator[None]:
    """Start a local Ray whose node address is 127.0.0.1, so its GCS, raylet, object manager and
    workers listen on loopback only: nothing but this machine uses them, and an open,
    unauthenticated Ray port is how Ray clusters have been taken over.

    Ray binds its servers to the node's address, which it takes from the network on Linux and
    turns any loopback address given (`_node_ip_address`) back into; its single-machine mode
    (`ENABLE_RAY_CLUSTER` off, as on macOS and Windows) uses 127.0.0.1. That mode holds while
    the node starts; its workers are told the address. A patch: `ray.init` has no option for
    it, and its variable (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER) is read once, as Ray is imported."""
    from ray._private import ray_constants

    if not hasattr(ray_constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    with replaced(ray_constants, "ENABLE_RAY_CLUSTER", False):
        yield


@contextlib.contextmanager
def lean_local_node(log_to_driver: bool) -> Iterator[None]:
    """Start a local Ray without the Python daemons a run has no use for: the autoscaler's
    monitor (one node, nothing to scale), the API server that `include_dashboard=False` still
    starts for Ray's usage reporting alone (and waits about a second for), and the log monitor
    unless workers' output goes to the driver (`log_to_driver`, `-v`). Each is a process that
    imports for a second or more of the two cores' time while Ray starts, and the monitor's
    graceful stop takes about a second more (`python -m benchmarks.overhead`, "Ray alone": 6.6
    against 3.9 s from start to exit here). A patch: `ray.init` passes neither setting on, and
    has no way to leave the API server out."""
    from ray._private import node, parameter

    with contextlib.ExitStack() as patches:
        params = getattr(parameter, "RayParams", None)
        if params is not None:
            lean = functools.partial(
                params, no_monitor=True, include_log_monitor=bool(log_to_driver)
            )
            patches.enter_context(replaced(parameter, "RayParams", lean))
        start_api_server = getattr(getattr(node, "Node", None), "start_api_server", None)
        if start_api_server is not None:
            patches.enter_context(
                replaced(node.Node, "start_api_server", _unless_dashboard(start_api_server))
            )
        yield


def _unless_dashboard(start_api_server: Any) -> Any:
    """Ray's `Node.start_api_server` where the dashboard is asked for, nothing otherwise."""

    @functools.wraps(start_api_server)
    def start(self: Any, **kwargs: Any) -> None:
        if kwargs.get("include_dashboard"):
            start_api_server(self, **kwargs)

    return start


@contextlib.contextmanager
def signals_left_to_the_driver() -> Iterator[None]:
    """Start or join Ray without Ray taking over the driver's SIGTERM.

    `ray.init` installs a SIGTERM handler that exits 15 with no word, its node one that stops
    the daemons and exits 1, and its core worker a C++ failure handler that prints a stack dump
    for SIGTERM: a job stopped while Ray started ended in one of those, not as an interrupted
    run. While this holds, Ray's `set_sigterm_handler` installs nothing and the driver's core
    worker no failure handler (`RAY_DISABLE_FAILURE_SIGNAL_HANDLER` read there, not from the
    environment, so workers keep theirs): the driver's handlers (`tune_app.interrupts`) stay.
    Two patches, not Python's `signal.pthread_sigmask` (SIGTERM blocked while Ray starts, the
    driver's handler put back after), tried: a mask is per thread, and the driver's other
    threads (a background import, a native one) took SIGTERM and ran Ray's handler (exit 15)."""
    from ray._private import ray_constants, utils

    with contextlib.ExitStack() as patches:
        if hasattr(utils, "set_sigterm_handler"):
            patches.enter_context(replaced(utils, "set_sigterm_handler", _install_nothing))
        if hasattr(ray_constants, "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"):
            patches.enter_context(
                replaced(ray_constants, "RAY_DISABLE_FAILURE_SIGNAL_HANDLER", True)
            )
        yield


def _install_nothing(handler: Any) -> None:
    """Ray's `set_sigterm_handler` while the driver keeps its own."""


# A GCS method any caller may make (it only answers), and Ray's environment variable for token
# authentication (`ray._private.authentication`, Ray 2.52 on).
_GCS_CHECK_ALIVE = "/ray.rpc.NodeInfoGcsService/CheckAlive"
AUTH_MODE = "RAY_AUTH_MODE"


def wants_a_token(host: str, port: int, timeout: float) -> bool:
    """Whether the GCS at host:port asks for Ray's authentication token that this process would
    not send (RAY_AUTH_MODE is not `token` here). ray.init, sending none, retries for 20 s and
    prints the GCS client's errors before failing with "Failed to connect to GCS"; one call
    without a token is refused at once (UNAUTHENTICATED) by a GCS started with
    RAY_AUTH_MODE=token, and answered by one without."""
    if os.environ.get(AUTH_MODE, "").lower() == "token":
        return False  # the token goes with ray.init's calls: Ray checks it
    import grpc

    with grpc.insecure_channel(f"{host}:{port}", options=[("grpc.enable_http_proxy", 0)]) as ch:
        try:
            ch.unary_unary(_GCS_CHECK_ALIVE)(b"", timeout=timeout)
        except grpc.RpcError as err:
            return bool(err.code() == grpc.StatusCode.UNAUTHENTICATED)
    return False
