"""TensorBoard for runs: per-trial scalars and HParams from each trial's start, and the server.

Each trial folder holds one events file (Tune's TensorBoard logger, extended here), so TensorBoard
shows every trial as one run with its scalars and, on the HParams tab, its searched parameters,
its status and its last metric values, from the moment it starts.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.tune.logger import TBXLoggerCallback

from tune_app import scoring
from tune_app.errors import SpecError
from tune_app.rllib import from_rllib
from tune_app.rllib_metrics import diverged
from tune_app.rundir.layout import find_runs, flatten, jsonable
from tune_app.space import Domain, iter_domains

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

    from tune_app.plan import ExperimentPlan

TAG_PREFIX = "ray/tune/"  # Tune's logger writes result key `a/b` as scalar `ray/tune/a/b`
SCORE_TAG = "tune_app/score"  # the trial's score under the experiment's scope
# Result keys Tune's logger leaves out: the step keys (written here too: a stop or metric may name
# them) and keys that are no metric at all.
STEP_KEYS = ("time_total_s", "training_iteration")
NOT_SCALARS = ("timestamp", "pid", "config", "trial_id", "date", "hostname", "node_ip", "done")
# Samplers drawing from [lower, upper] (give or take the upper bound) show as a range filter.
_INTERVALS = (
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
)
FLUSH_S = 1.0  # how late an event may reach the disk (Tune's writers take 30 s)
_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


class TrialBoard(TBXLoggerCallback):
    """Tune's TensorBoard logger with HParams of the searched parameters written as trials start.

    Tune writes HParams only when a trial ends (none for a trial that errored before reporting),
    and of every config key; this writes the experiment's config and a session start when a trial
    starts, and its end with a status, into the events file of the trial's scalars.
    """

    def __init__(
        self,
        hparams: dict[str, Domain],
        metrics: tuple[str, ...],
        metric: str | None,
        scope: str = scoring.DEFAULT_SCOPE,
        mode: str | None = "max",
    ) -> None:
        super().__init__()
        self._summary_writer_cls = _summary_writer
        self.hparams = dict(hparams)  # dotted config path -> its domain in the spec
        self.metrics = tuple(metrics)
        self.metric = metric
        self.scope, self.mode = scope, mode
        self.values: dict[str, list[float]] = {}  # trial id -> its metric values so far
        self.created = time.time()

    @classmethod
    def for_experiment(cls, ep: ExperimentPlan) -> TrialBoard:
        domains = dict(iter_domains(ep.experiment.config))
        return cls(
            {p: domains[p] for p in ep.searched},
            metric_keys(ep),
            ep.metric,
            scope=ep.experiment.scope,
            mode=ep.mode,
        )

    @property
    def shown_metrics(self) -> dict[str, str]:
        """HParams' metric columns, tag -> name: the trial's score first, then the metrics."""
        shown = {}
        if self.metric:
            shown[SCORE_TAG] = f"score: {self.metric} ({scoring.describe(self.scope)})"
        shown.update({TAG_PREFIX + k: k for k in self.metrics})
        return shown

    def log_trial_start(self, trial: Trial) -> None:
        super().log_trial_start(trial)
        # Also on a restart (resume, retry, unpause); TensorBoard keeps the first of each tag.
        self._write(trial, experiment_summary(self.hparams, self.shown_metrics, self.created))
        self._write(trial, session_start(searched_values(trial.config, self.hparams)))

    def log_trial_result(self, iteration: int, trial: Trial, result: dict) -> None:
        if trial not in self._trial_writer:
            self.log_trial_start(trial)
        step = result.get("timesteps_total") or result["training_iteration"]  # as Tune's
        for key in STEP_KEYS:
            value = result.get(key)
            if scoring.finite(value) is not None:
                self._trial_writer[trial].add_scalar(TAG_PREFIX + key, value, global_step=step)
        value = scoring.finite(flatten(result, "/").get(self.metric)) if self.metric else None
        if value is not None:
            values = self.values.setdefault(trial.trial_id, [])
            values.append(value)
            # The score as the summary ranks trials, so HParams sorts them the same way.
            score = scoring.score(values, self.scope, self.mode)
            self._trial_writer[trial].add_scalar(SCORE_TAG, score, global_step=step)
        super().log_trial_result(iteration, trial, result)

    def log_trial_end(self, trial: Trial, failed: bool = False) -> None:
        if trial not in self._trial_writer:  # ended before it started (its actor failed)
            self.log_trial_start(trial)
        last = flatten(trial.last_result or {}, "/")
        self._write(trial, session_end(failed or diverged(last, self.metric) is not None))
        super().log_trial_end(trial, failed)

    def _try_log_hparams(self, trial: Trial, result: dict) -> None:
        """Tune's own end-of-trial HParams: off, this callback writes them from the start."""

    def _write(self, trial: Trial, summary: Any) -> None:
        from tensorboardX.proto.summary_pb2 import Summary

        # tensorboardX has its own copy of TensorBoard's Summary proto; the bytes are the same.
        writer = self._trial_writer[trial].file_writer
        writer.add_summary(Summary.FromString(summary.SerializeToString()))  # on disk in FLUSH_S

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its run config for resume; open event writers cannot travel.
        return {**self.__dict__, "_trial_writer": {}, "_trial_result": {}}


def _summary_writer(logdir: str, flush_secs: float = FLUSH_S) -> Any:
    """Tune's writer, flushing every FLUSH_S: its `flush()` leaves queued events unwritten."""
    from tensorboardX import SummaryWriter

    return SummaryWriter(logdir, flush_secs=min(flush_secs, FLUSH_S))


def metric_keys(ep: ExperimentPlan) -> tuple[str, ...]:
    """Result keys the HParams table shows: the metric, stop and expect keys, the declared ones."""
    keys = [ep.metric] if ep.metric else []
    keys += [*ep.experiment.stop, *ep.experiment.expect.metrics]
    if ep.trainable.info is not None:
        keys += ep.trainable.info.metrics
    return tuple(k for k in dict.fromkeys(keys) if k not in NOT_SCALARS)


def hparam_value(value: Any) -> bool | float | str:
    """A config value as HParams holds it: a bool, a number, a string, or JSON text for the rest."""
    value = jsonable(value)
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return float(value)
    return json.dumps(value)


def searched_values(config: dict[str, Any], hparams: dict[str, Domain]) -> dict[str, Any]:
    """The trial's value of each searched path (`a.b[0]`), as HParams holds it."""
    config = from_rllib(config)  # RLlib's attribute names back to the spec's
    values = {}
    for path in hparams:
        node: Any = config
        try:
            for index, key in _SEGMENT.findall(path):
                node = node[int(index)] if index else node[key]
        except (KeyError, IndexError, TypeError):
            continue
        values[path] = hparam_value(node)
    return values


def hparam_info(path: str, domain: Domain) -> Any:
    """The HParams column of a searched path: its discrete values, its range, or just its name."""
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp

    # Searched, so it differs between trials: TensorBoard shows such columns first.
    info = api_pb2.HParamInfo(name=path, differs=True)
    if domain.kind in ("grid_search", "choice"):
        values = list(dict.fromkeys(hparam_value(v) for v in domain.args))
        nested = any(next(iter_domains(v), None) for v in domain.args)
        if not nested and len({type(v) for v in values}) == 1:
            hp.Discrete(values).update_hparam_info(info)
    elif domain.kind in _INTERVALS:
        hp.RealInterval(float(domain.args[0]), float(domain.args[1])).update_hparam_info(info)
    return info


def experiment_summary(
    hparams: dict[str, Domain], metrics: dict[str, str], created: float | None = None
) -> Any:
    """The HParams experiment: the searched paths, and the metrics as scalar tags of each trial."""
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp

    experiment = api_pb2.Experiment(
        hparam_infos=[hparam_info(p, d) for p, d in hparams.items()],
        metric_infos=[
            hp.Metric(tag, display_name=name).as_proto() for tag, name in metrics.items()
        ],
        time_created_secs=created,
    )
    return _summary("experiment", plugin_data_pb2.HParamsPluginData(experiment=experiment))


def session_start(values: dict[str, bool | float | str]) -> Any:
    """A trial's HParams session start; no group name, so each trial is its own row."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    info = plugin_data_pb2.SessionStartInfo(start_time_secs=time.time())
    for name, value in values.items():
        field = (
            "bool_value"
            if isinstance(value, bool)
            else "number_value"
            if isinstance(value, float)
            else "string_value"
        )
        setattr(info.hparams[name], field, value)
    return _summary(
        "session_start_info", plugin_data_pb2.HParamsPluginData(session_start_info=info)
    )


def session_end(failed: bool) -> Any:
    """A trial's HParams session end: success or failure."""
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

    status = api_pb2.STATUS_FAILURE if failed else api_pb2.STATUS_SUCCESS
    info = plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=time.time())
    return _summary("session_end_info", plugin_data_pb2.HParamsPluginData(session_end_info=info))


def _summary(name: str, data: Any) -> Any:
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import metadata

    summary = summary_pb2.Summary()
    summary.value.add(
        tag=f"_hparams_/{name}",
        metadata=metadata.create_summary_metadata(data),
        tensor=metadata.NULL_TENSOR,
    )
    return summary


def serve(folder: Path, host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve TensorBoard on a run's folder (or a storage folder of runs) until interrupted."""
    runs = find_runs(folder)
    _check_address(host, port)
    from tensorboard import program

    made: list[Any] = []

    def make_server(app: Any, flags: Any) -> Any:
        made.append(program.WerkzeugServer(app, flags))
        return made[-1]

    board = program.TensorBoard(server_class=make_server)
    board.configure(logdir=str(folder.expanduser()), host=host, port=port)
    try:
        url = board.launch()  # serves on a daemon thread
    except program.TensorBoardServerException as err:
        raise SpecError(f"cannot serve on {host}:{port}: {err.msg}") from None
    if len(runs) > 1:
        print(
            f"note: {len(runs)} experiments; TensorBoard's HParams tab takes its columns from one "
            "of them (give an experiment folder to compare its trials)",
            file=sys.stderr,
        )
    print(f"TensorBoard on {folder} at {url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        made[0].shutdown()
        made[0].server_close()


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
