"""Where Ray runs for a run: a local Ray on loopback, sized to the plan and stopped at the end,
or a cluster joined with `--address` / RAY_ADDRESS, with this package, `trainables/` and the
user's modules shipped to its nodes as Ray `py_modules`; and whether the plan fits it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import socket
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

import trainables
import tune_app
from tune_app.errors import SpecError, first_line
from tune_app.interrupts import deferred, reclaim
from tune_app.plan.types import Plan
from tune_app.ray_internals.replacing import environment
from tune_app.ray_internals.startup import (
    AUTH_MODE,
    TUNE_TRIAL_ENV,
    daemons_in_own_session,
    lean_local_node,
    node_on_loopback,
    recorded_cluster,
    signals_left_to_the_driver,
    wants_a_token,
)
from tune_app.resources import ClusterAddress, Machine, misfit

# Ray Train's own switch (documented with Train's second versions): with it off, a trial process's
# `ray.train.report`, `get_checkpoint` and `get_context` are Train's first versions, which hand
# over to ray.tune's in a Tune trial. Trainables as Ray 2.7 to 2.40 documented them run; Train's
# second versions raise DeprecationWarning in a Tune trial, failing every one.
TRAIN_FUNCTIONS_ENV = {"RAY_TRAIN_V2_ENABLED": "0"}
# Ray's own switch (ray/_private/accelerators/accelerator.py, read by each worker as it runs a
# task or actor): Ray 2.60 no longer blanks CUDA_VISIBLE_DEVICES for work that reserved no GPU
# (ray PR 62492), so a `gpu: 0` trial, or an RLlib env runner, whose torch asks for CUDA used a
# GPU reserved by other trials. With it on, such work runs with CUDA_VISIBLE_DEVICES set and
# empty, as before 2.60; a user who exported it (=0) keeps Ray's new behaviour.
NO_GPU_UNRESERVED = "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"


def worker_env() -> dict[str, str]:
    """The environment variables every worker of a run gets (inherited from a local Ray, or as
    the job's runtime env on a cluster, which the actors a trial starts inherit in turn)."""
    return {**TRAIN_FUNCTIONS_ENV, NO_GPU_UNRESERVED: os.environ.get(NO_GPU_UNRESERVED, "1")}


@contextlib.contextmanager
def ray_for(plan: Plan, address: ClusterAddress | None, verbosity: int) -> Iterator[None]:
    """Ray for this run: the cluster at `address` joined, or, with none, a local Ray started and,
    at the end, stopped."""
    kwargs: dict[str, Any] = dict(
        include_dashboard=False,
        logging_level=logging.WARNING if verbosity >= 2 else logging.ERROR,
        # Workers' own output (trainables' prints, RLlib's warnings) only with -v.
        log_to_driver=verbosity >= 2,
    )
    if address:
        with signals_left_to_the_driver():
            ray.init(address=address.text, runtime_env=runtime_env(plan), **kwargs)
        reclaim()
        try:
            yield
        finally:
            ray.shutdown()
        return
    # What Tune would give each trial actor as its runtime env, inherited instead: see
    # trials_on_prestarted_workers.
    for key, value in {**TUNE_TRIAL_ENV, **worker_env()}.items():
        os.environ.setdefault(key, value)
    # The local Ray's workers inherit PYTHONPATH; the user's own is back after Ray stops: a later
    # spec in this process would take this one's folders, put there for the workers, for its
    # own code (`tune_app.user_code.user_path`).
    path = local_pythonpath(plan)
    with environment({"PYTHONPATH": path} if path else {}):
        try:  # an interruption while Ray starts stops what did start
            with (
                daemons_in_own_session(),
                node_on_loopback(),
                lean_local_node(kwargs["log_to_driver"]),
                signals_left_to_the_driver(),
            ):
                # A signal waits for the local Ray to have started, then interrupts: raised
                # inside ray.init, once in a CI run, the process aborted ("terminate called
                # without an active exception": a C++ thread of its core worker left running at
                # exit).
                with deferred():
                    ray.init(address="local", num_cpus=int(plan.cpus), **kwargs)
            reclaim()  # should a handler of Ray's have got through
            yield
        finally:
            ray.shutdown()


def check_cluster(plan: Plan) -> None:
    """SpecError when one trial can never run on the Ray this run joined or started: the same
    count as the plan's (`resources.misfit`), against the nodes Ray reports."""
    machine = running_machine("the cluster")
    for ep in plan.experiments:
        found = misfit(ep.bundles, machine)
        if found is not None:
            raise SpecError(
                found.text,
                path=f"{ep.experiment.key_path}.resources_per_trial",
                suggestion="ask for fewer resources per trial",
            )


def running_machine(name: str) -> Machine:
    """The alive nodes of the Ray this process is joined to, each as its resource totals (the
    per-node `node:<ip>` markers left out)."""
    nodes = tuple(
        {k: float(v) for k, v in n["Resources"].items() if not k.startswith("node:")}
        for n in ray.nodes()
        if n.get("Alive")
    )
    return Machine(nodes=nodes, name=name)


def machine_at(address: ClusterAddress) -> Machine:
    """A running cluster's nodes, read by joining it as a driver for a moment: no trial, task
    or actor is started. SpecError (exit 2) when it cannot be joined."""
    text = address.text
    name = f"the cluster at {text}"
    _reachable(address)
    if ray.is_initialized():  # a notebook or a test already joined a cluster: this one?
        joined = ray.get_runtime_context().gcs_address
        if re.fullmatch(r"[\w.\-]+:\d+", text) and not _same_address(joined, text):
            raise SpecError(
                f"this process has already joined the Ray at {joined}, not {text}",
                path=address.given_as,
                suggestion="ray.shutdown() first, or plan from a new process",
            )
        return running_machine(name)
    try:
        with warnings.catch_warnings():  # Ray client's timeout warning: the line below says it
            warnings.simplefilter("ignore", UserWarning)
            ray.init(
                address=text,
                include_dashboard=False,
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise _cannot_join(address, "the cluster", first_line(err)) from None
    try:
        return running_machine(name)
    finally:
        ray.shutdown()


def _same_address(joined: str, address: str) -> bool:
    """Whether two HOST:PORT addresses name one GCS (localhost and 127.0.0.1 alike)."""

    def norm(text: str) -> tuple[str, str]:
        host, _, port = text.rpartition(":")
        try:
            return socket.gethostbyname(host), port
        except OSError:
            return host, port

    return norm(joined) == norm(address)


# A GCS address (HOST:PORT) or a Ray client one (ray://HOST:PORT): what `_reachable` knocks on.
_ADDRESS = re.compile(r"(ray://)?([\w.\-]+|\[[0-9A-Fa-f:.]+\]):(\d+)/?")
PROBE_S = 3.0  # a TCP connect to a live head answers in milliseconds, a refused one at once


def _reachable(address: ClusterAddress) -> None:
    """SpecError at once when a HOST:PORT or ray://HOST:PORT address takes no connection:
    ray.init would wait minutes for a GCS (Ray 2.60 retried for over 2 minutes here), and 31 s
    for a Ray client server, then print Ray's raw UserWarning before the app's line; or when
    the GCS there asks for a token this process would not send (`wants_a_token`)."""
    text = address.text
    if text == "auto" and (recorded := recorded_cluster()):  # what ray.init would wait for
        text = recorded
        said = f"auto ({recorded}: RAY_ADDRESS, or the last `ray start` on this machine)"
        address = dataclasses.replace(address, text=said)
    plain = _ADDRESS.fullmatch(text)
    if plain is None:
        return  # "local", or "auto" with none recorded: Ray's own rules and error
    client, host, port = plain.groups()
    what = "the Ray client server" if client else "the cluster"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_S).close()
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        if isinstance(err, TimeoutError):
            reason = f"nothing answered on port {port} within {PROBE_S:g} s"
        start = "ray start --head" + (" (it serves ray:// on port 10001)" if client else "")
        raise _cannot_join(address, what, reason, start) from None
    if not client and wants_a_token(host.strip("[]"), int(port), PROBE_S):
        raise SpecError(
            f"the cluster at {address.text} asks for Ray's authentication token (it runs with "
            f"{AUTH_MODE}=token), and this process sends none ({AUTH_MODE} is not token here)",
            path=address.given_as,
            suggestion=f"export {AUTH_MODE}=token, with the cluster's token (`ray "
            "get-auth-token` on its head prints it) in ~/.ray/auth_token, in the file "
            "RAY_AUTH_TOKEN_PATH names, or in RAY_AUTH_TOKEN",
        )


def _cannot_join(
    address: ClusterAddress, what: str, reason: str, start: str = "ray start --head"
) -> SpecError:
    """`what` at `address` cannot be joined; from RAY_ADDRESS, the way back to a local Ray too."""
    from_env = address.given_as == "RAY_ADDRESS"
    local = "unset RAY_ADDRESS to start a local Ray, or " if from_env else ""
    return SpecError(
        f"cannot join {what} at {address.text}: {reason}",
        path=address.given_as,
        suggestion=f"{local}start it with {start}, or check the address (ray status)",
    )


# A spec folder's own .py files travel with it (a trainable's helpers live beside it), up to this.
MAX_SIBLING_BYTES = 1_000_000


def local_pythonpath(plan: Plan) -> str | None:
    """PYTHONPATH for a local Ray this process starts: the user modules' folders first. Workers
    inherit it, so Ray's pre-started workers serve the first trials (a runtime env would make
    every worker start afresh: about 2 s before the first result). The folders keep the order the
    driver resolved the modules in (the spec's folder before the working directory), so a worker
    imports the same file the driver checked."""
    folders = list(dict.fromkeys(f for ep in plan.experiments for f in ep.search_path))
    if not folders:
        return None
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys([*folders, *filter(None, existing.split(os.pathsep))]))


def runtime_env(plan: Plan) -> dict[str, Any]:
    """The runtime env of the driver's job on a cluster: the code itself, as py_modules, and
    `worker_env`."""
    modules = [_package_dir(tune_app), _package_dir(trainables)]
    for ep in plan.experiments:
        for name in [*ep.trainable.kind.user_modules, *ep.env_modules]:
            modules += _module_files(name.split(".")[0], ep.search_path)
    return {"py_modules": list(dict.fromkeys(modules)), "env_vars": worker_env()}


def _module_files(top: str, folders: tuple[str, ...]) -> list[str]:
    """The files of a user's top-level module found in `folders` (an installed one travels not:
    the cluster's image must have it), with the small .py files beside it."""
    for folder in map(Path, folders):
        package, single = folder / top, folder / f"{top}.py"
        if package.is_dir() or single.is_file():
            found = [str(package if package.is_dir() else single)]
            siblings = sorted(p for p in folder.glob("*.py") if p.name != single.name)
            found += [str(p) for p in siblings if p.stat().st_size <= MAX_SIBLING_BYTES]
            return found
    return []


def _package_dir(module: Any) -> str:
    return str(Path(module.__file__).resolve().parent)
