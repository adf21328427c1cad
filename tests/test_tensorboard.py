"""`tune_app tensorboard`: every trial one run with its scalars, and on the HParams tab its
searched parameters, status and metrics from its start, checked through a real TensorBoard."""

from __future__ import annotations

import json
import math
import pickle
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2, metadata

from tune_app import spec
from tune_app.plan import make_plan
from tune_app.space import Domain
from tune_app.tensorboard import (
    TrialBoard,
    hparam_info,
    hparam_value,
    metric_keys,
    searched_values,
)

from .conftest import ROOT, SEARCH_SPACES, user_module

SPEC = """
experiments:
  tb:
    run: board_flaky:train
    metric: mean_accuracy
    mode: max
    stop: {training_iteration: 3}
    expect: {max_errored_trials: 1}
    config:
      alpha: {grid_search: [0.2, 0.4, 0.6]}
      act: {choice: [relu, tanh]}
      beta: 1
"""

STATUSES = ["STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING", "STATUS_UNKNOWN"]


@dataclass(eq=False)
class FakeTrial:
    """What TrialBoard reads of a Tune trial."""

    local_path: str
    config: dict[str, Any]
    trial_id: str = "fake_00000"
    last_result: dict[str, Any] = field(default_factory=dict)
    evaluated_params: dict[str, Any] = field(default_factory=dict)

    def init_local_path(self) -> None:
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def _board(folder: Path) -> TrialBoard:
    (folder / "spec.yaml").write_text(SPEC)
    user_module("board_flaky.py", folder, "board_flaky.py")
    plan = make_plan(spec.load(folder / "spec.yaml"), storage_path=str(folder / "out"))
    return TrialBoard.for_experiment(plan.experiments[0])


def _hparams(folder: Path, *tags: str) -> dict[str, Any]:
    """The HParams summaries in a trial folder's events, by tag, once `tags` are there."""
    deadline = time.monotonic() + 10  # the writer flushes every FLUSH_S
    while True:
        events = EventAccumulator(str(folder))
        events.Reload()
        try:
            content = events.PluginTagToContent(metadata.PLUGIN_NAME)
        except KeyError:  # none written yet
            content = {}
        if set(tags) <= set(content) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    parsers = {
        metadata.EXPERIMENT_TAG: metadata.parse_experiment_plugin_data,
        metadata.SESSION_START_INFO_TAG: metadata.parse_session_start_info_plugin_data,
        metadata.SESSION_END_INFO_TAG: metadata.parse_session_end_info_plugin_data,
    }
    return {tag: parsers[tag](data) for tag, data in content.items()}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(3, 3.0, id="int"),
        pytest.param(0.5, 0.5, id="float"),
        pytest.param(True, True, id="bool"),
        pytest.param("relu", "relu", id="str"),
        pytest.param([64, 64], "[64, 64]", id="list"),
        pytest.param({"a": 1}, '{"a": 1}', id="dict"),
        pytest.param(None, "null", id="none"),
    ],
)
def test_config_values_become_numbers_strings_or_bools(value: Any, expected: Any) -> None:
    converted = hparam_value(value)
    assert converted == expected and type(converted) is type(expected)


def test_numpy_values_are_unwrapped() -> None:
    np = pytest.importorskip("numpy")
    assert hparam_value(np.float32(0.5)) == 0.5 and hparam_value(np.bool_(True)) is True


def test_searched_values_follow_the_dotted_paths_only() -> None:
    hparams = {
        "lr": Domain("uniform", (0.0, 1.0)),
        "model_config.fcnet_hiddens": Domain("choice", ([32], [64])),
        "layers[1]": Domain("grid_search", (1, 2)),
    }
    config = {"lr": 0.1, "_model_config": {"fcnet_hiddens": [64]}, "layers": [7, 2], "gamma": 1}
    assert searched_values(config, hparams) == {
        "lr": 0.1,
        "model_config.fcnet_hiddens": "[64]",  # RLlib's attribute is `_model_config`
        "layers[1]": 2.0,
    }


@pytest.mark.parametrize(
    ("domain", "kind", "expected"),
    [
        pytest.param(Domain("grid_search", (1, 2)), "domain_discrete", [1.0, 2.0], id="grid"),
        pytest.param(Domain("choice", ("a", "b")), "domain_discrete", ["a", "b"], id="choice"),
        pytest.param(Domain("loguniform", (1e-4, 0.1)), "domain_interval", (1e-4, 0.1), id="log"),
        pytest.param(Domain("randint", (1, 9)), "domain_interval", (1.0, 9.0), id="randint"),
        pytest.param(Domain("randn", (0.0, 1.0)), None, None, id="normal: no domain"),
        pytest.param(Domain("choice", (1, "a")), None, None, id="mixed types: no domain"),
        pytest.param(
            Domain("grid_search", ({"x": Domain("uniform", (0, 1))},)),
            None,
            None,
            id="nested domain: no domain",
        ),
    ],
)
def test_hparam_columns_carry_the_spec_domain(domain: Domain, kind: str | None, expected) -> None:
    info = hparam_info("p", domain)
    assert info.name == "p" and info.differs
    assert info.WhichOneof("domain") == kind
    if kind == "domain_discrete":
        assert [v.number_value or v.string_value for v in info.domain_discrete.values] == expected
    elif kind == "domain_interval":
        got = (info.domain_interval.min_value, info.domain_interval.max_value)
        assert got == pytest.approx(expected)


def test_metrics_are_the_spec_metric_stop_keys_and_the_declared_ones() -> None:
    plan = make_plan(spec.load(SEARCH_SPACES / "grid.yaml"))
    assert metric_keys(plan.experiments[0]) == (
        "mean_accuracy",
        "training_iteration",
        "timesteps_total",
    )


def test_a_trial_is_listed_from_its_start_and_ends_with_its_status(tmp_path: Path) -> None:
    board = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.4, "act": "tanh", "beta": 1})
    board.on_trial_start(0, [trial], trial)

    # Before any result: listed, still running.
    started = _hparams(tmp_path / "trial", metadata.SESSION_START_INFO_TAG)
    assert set(started) == {metadata.EXPERIMENT_TAG, metadata.SESSION_START_INFO_TAG}
    hparams = started[metadata.SESSION_START_INFO_TAG].hparams
    assert {k: v.number_value or v.string_value for k, v in hparams.items()} == {
        "alpha": 0.4,
        "act": "tanh",
    }
    experiment = started[metadata.EXPERIMENT_TAG]
    assert [h.name for h in experiment.hparam_infos] == ["alpha", "act"]
    # The trial's score (how the summary ranks it) first, then the metrics.
    assert [m.name.tag for m in experiment.metric_infos] == [
        "tune_app/score",
        "ray/tune/mean_accuracy",
        "ray/tune/training_iteration",
    ]
    assert experiment.metric_infos[0].display_name == "score: mean_accuracy (last value)"

    for step, accuracy in enumerate([1.5, 0.5], 1):
        result = {"mean_accuracy": accuracy, "training_iteration": step, "time_total_s": 0.5}
        board.on_trial_result(0, [trial], trial, result)
    trial.last_result = result
    board.on_trial_complete(0, [trial], trial)
    ended = _hparams(tmp_path / "trial")[metadata.SESSION_END_INFO_TAG]
    assert ended.status == api_pb2.STATUS_SUCCESS
    events = EventAccumulator(str(tmp_path / "trial"))
    events.Reload()
    assert {"ray/tune/training_iteration", "ray/tune/time_total_s"} <= set(events.Tags()["scalars"])
    assert [e.value for e in events.Scalars("tune_app/score")] == [1.5, 0.5]  # scope: last


@pytest.mark.parametrize(
    ("error", "value"),
    [pytest.param(True, 1.0, id="errored"), pytest.param(False, math.nan, id="diverged")],
)
def test_errored_and_diverged_trials_end_as_failures(
    tmp_path: Path, error: bool, value: float
) -> None:
    board = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.2, "act": "relu", "beta": 1})
    trial.last_result = {"mean_accuracy": value, "training_iteration": 1}
    # No start seen: an actor that failed to start still gets its row.
    end = board.on_trial_error if error else board.on_trial_complete
    end(0, [trial], trial)
    written = _hparams(tmp_path / "trial")
    assert written[metadata.SESSION_START_INFO_TAG].hparams["alpha"].number_value == 0.2
    assert written[metadata.SESSION_END_INFO_TAG].status == api_pb2.STATUS_FAILURE


def test_the_callback_pickles_without_its_open_writers(tmp_path: Path) -> None:
    board = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.2, "act": "relu", "beta": 1})
    board.on_trial_start(0, [trial], trial)
    restored = pickle.loads(pickle.dumps(board))
    assert restored._trial_writer == {} and restored.hparams == board.hparams
    board.on_trial_complete(0, [trial], trial)


# ---- end to end: a real run, served by a real TensorBoard ----------------------------------


@pytest.fixture(scope="module")
def board_run(ray_session, tmp_path_factory) -> Path:
    """A finished search with an errored trial, plus a trial that started and never ended."""
    from tune_app.cli import main

    root = tmp_path_factory.mktemp("board")
    board = _board(root)
    code = main(["run", str(root / "spec.yaml"), "--storage-path", str(root / "out"), "-q"])
    assert code == 0
    folder = root / "out" / "tb"
    # As a run killed mid-trial leaves it: a session start, no end.
    running = FakeTrial(str(folder / "running_trial"), {"alpha": 0.4, "act": "relu", "beta": 1})
    board.on_trial_start(0, [running], running)
    board._trial_writer.pop(running).close()
    return folder


@dataclass
class Served:
    url: str
    process: subprocess.Popen
    stderr: Path

    def get(self, route: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(
            self.url + route,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-XSRF-Protected": "1"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def session_groups(self) -> list[dict[str, Any]]:
        body = {"experimentName": "", "allowedStatuses": STATUSES, "sliceSize": 100}
        return self.get("data/plugin/hparams/session_groups", body)["sessionGroups"]

    def stop(self) -> int:
        """Ctrl-C, as a user would; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture(scope="module")
def served(board_run, tmp_path_factory) -> Iterator[Served]:
    """`tune_app tensorboard` on the run's folder, once every trial's data is loaded."""
    stderr = tmp_path_factory.mktemp("served") / "stderr.txt"
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "tune_app", "tensorboard", str(board_run), "--port", "0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        deadline = time.monotonic() + 60
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, f"no URL printed: {stderr.read_text()}"
        line = process.stdout.readline()
        assert " at http://" in line, f"{line!r} {stderr.read_text()}"
        url = line.split(" at ", 1)[1].split()[0]
        board = Served(url, process, stderr)
        while len(board.session_groups()) < 4:  # three trials and the one left running
            assert time.monotonic() < deadline, "TensorBoard did not load the runs in 60 s"
            time.sleep(0.5)
        yield board
    finally:
        Served("", process, stderr).stop()
        process.stdout.close()


def _trials(folder: Path) -> list[dict[str, Any]]:
    trials = json.loads((folder / "summary.json").read_text())["trials"]
    assert len(trials) == 3
    return trials


def test_it_serves_on_localhost_a_free_port(served: Served) -> None:
    assert served.url.startswith("http://127.0.0.1:")


def test_every_reported_metric_is_a_scalar_of_its_trial(board_run, served: Served) -> None:
    tags = served.get("data/plugin/scalars/tags")
    for trial in _trials(board_run):
        if trial["status"] == "ERROR":
            assert trial["path"] not in tags  # it failed before reporting
            continue
        reported = {"mean_accuracy", "loss", "training_iteration", "time_total_s"}
        assert {f"ray/tune/{k}" for k in reported} <= set(tags[trial["path"]])


def test_hparams_columns_are_the_searched_parameters_and_the_metric(served: Served) -> None:
    experiment = served.get("data/plugin/hparams/experiment", {"experimentName": ""})
    columns = {h["name"]: h for h in experiment["hparamInfos"]}
    assert set(columns) == {"alpha", "act"}  # not beta, which is fixed
    assert columns["alpha"]["domainDiscrete"] == [0.2, 0.4, 0.6]
    assert columns["act"]["domainDiscrete"] == ["relu", "tanh"]
    metrics = [m["name"]["tag"] for m in experiment["metricInfos"]]
    # The score the summary ranks trials by comes first.
    assert metrics == ["tune_app/score", "ray/tune/mean_accuracy", "ray/tune/training_iteration"]


def test_every_trial_is_listed_with_its_values_status_and_metric(board_run, served) -> None:
    groups = {g["name"]: g for g in served.session_groups()}
    status = {"TERMINATED": "STATUS_SUCCESS", "ERROR": "STATUS_FAILURE"}
    for trial in _trials(board_run):
        group = groups[trial["path"]]
        assert group["hparams"] == {k: trial["config"][k] for k in ("alpha", "act")}
        (session,) = group["sessions"]
        assert session["status"] == status[trial["status"]]
        values = {m["name"]["tag"]: m["value"] for m in session["metricValues"]}
        if trial["status"] == "ERROR":
            assert trial["config"]["alpha"] == 0.6 and values == {}
        else:
            assert values["ray/tune/mean_accuracy"] == pytest.approx(trial["metric"], rel=1e-6)
            assert values["ray/tune/training_iteration"] == 3
    (running,) = groups["running_trial"]["sessions"]
    assert running["status"] == "STATUS_UNKNOWN" and not running.get("endTimeSecs")
    assert groups["running_trial"]["hparams"] == {"alpha": 0.4, "act": "relu"}


def test_ctrl_c_stops_it_with_exit_130_and_no_traceback(served: Served) -> None:
    # Last in this module: the other tests share the server this stops.
    assert served.stop() == 130
    err = served.stderr.read_text()
    assert "Traceback" not in err and err.strip().endswith("interrupted")


@pytest.mark.parametrize(
    ("where", "args", "words"),
    [
        pytest.param("missing", (), "does not exist", id="missing"),
        pytest.param("empty", (), "holds no tune_app run", id="not a run"),
        pytest.param("run", ("--port", "70000"), "--port must be 0 to 65535", id="bad port"),
    ],
)
def test_a_folder_that_is_no_run_is_refused_in_one_line(cli, tmp_path, where, args, words) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    before = sorted(tmp_path.rglob("*"))
    result = cli("tensorboard", tmp_path / where, *args)
    assert result.code == 2 and words in result.err
    assert result.err.count("\n") == 1 and result.out == ""
    assert sorted(tmp_path.rglob("*")) == before


def test_a_port_in_use_is_refused_in_one_line(cli, tmp_path) -> None:
    (tmp_path / "run.json").write_text("{}")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = cli("tensorboard", tmp_path, "--port", port)
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"cannot serve on 127.0.0.1:{port}" in result.err and "--port 0" in result.err
