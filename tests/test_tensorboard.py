"""`tune_app tensorboard`: every trial one run with its scalars in groups (the spec's keys first,
no bookkeeping, no timers unless asked), and on the HParams tab one row per trial with its
searched parameters, status and metrics from its start, checked through a real TensorBoard."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import pickle
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2, metadata

from tune_app import scoring, spec
from tune_app.plan.make import make_plan
from tune_app.space import Domain
from tune_app.tensorboard import (
    BOOKKEEPING,
    SPEC_GROUP,
    TagLayout,
    TrialBoard,
    events,
    flat_result,
    hparam_info,
    hparam_value,
    metric_keys,
    searched_values,
)
from tune_app.tensorboard import hparams as hp
from tune_app.tensorboard.server import DEFAULT_PORT, pick_port

from .conftest import ROOT, SEARCH_SPACES, refused, user_module

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

    @property
    def path(self) -> str:  # a local run: the trial's folder in it
        return self.local_path


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
        pytest.param(np.float32(0.5), 0.5, id="numpy float"),
        pytest.param(np.bool_(True), True, id="numpy bool"),
    ],
)
def test_config_values_become_numbers_strings_or_bools(value: Any, expected: Any) -> None:
    converted = hparam_value(value)
    assert converted == expected and type(converted) is type(expected)


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
    assert info.name == "p"
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


def test_every_objective_is_a_metric_of_hparams(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        "metric: [timesteps_total, mean_accuracy]\nmode: [min, max]\n"
        "experiments:\n"
        "  e: {run: my_func, stop: {training_iteration: 2}, config: {alpha: 0.5, beta: 1}}\n"
    )
    (ep,) = make_plan(spec.load(tmp_path / "spec.yaml")).experiments
    assert metric_keys(ep) == ("timesteps_total", "mean_accuracy", "training_iteration")


RLLIB = TagLayout(named=("env_runners/episode_return_mean", "training_iteration"))


@pytest.mark.parametrize(
    ("layout", "key", "tag"),
    [
        pytest.param(
            RLLIB,
            "env_runners/episode_return_mean",
            "0_spec/env_runners/episode_return_mean",
            id="metric",
        ),
        pytest.param(RLLIB, "training_iteration", "0_spec/training_iteration", id="stop key"),
        pytest.param(
            RLLIB,
            "learners/default_policy/total_loss",
            "learners/default_policy/total_loss",
            id="own group",
        ),
        pytest.param(
            RLLIB,
            "num_env_steps_sampled_lifetime",
            "metrics/num_env_steps_sampled_lifetime",
            id="top level",
        ),
        pytest.param(RLLIB, "time_this_iter_s", "metrics/time_this_iter_s", id="tune timing"),
        pytest.param(TagLayout(), "training_iteration", None, id="step: not named"),
        pytest.param(RLLIB, "done", None, id="done"),
        pytest.param(RLLIB, "should_checkpoint", None, id="should_checkpoint"),
        pytest.param(RLLIB, "iterations_since_restore", None, id="iterations_since_restore"),
        pytest.param(RLLIB, "time_since_restore", None, id="time_since_restore"),
        pytest.param(RLLIB, "pid", None, id="pid"),
        pytest.param(RLLIB, "timers/training_step", None, id="timers group"),
        pytest.param(RLLIB, "env_runners/env_step_timer", None, id="a _timer"),
        pytest.param(
            RLLIB,
            "learners/__all_modules__/learner_connector/timers/connectors/numpy_to_tensor",
            None,
            id="connector timers",
        ),
        pytest.param(
            TagLayout(include=("timers",)),
            "timers/training_step",
            "timers/training_step",
            id="include group",
        ),
        pytest.param(
            TagLayout(include=("timers",)),
            "env_runners/env_step_timer",
            None,
            id="include: that group only",
        ),
        pytest.param(
            TagLayout(include=("*timer*",)),
            "env_runners/env_step_timer",
            "env_runners/env_step_timer",
            id="include glob",
        ),
        pytest.param(
            TagLayout(include=("done",)), "done", "metrics/done", id="include bookkeeping"
        ),
        pytest.param(
            TagLayout(exclude=("perf",)), "perf/cpu_util_percent", None, id="exclude group"
        ),
        pytest.param(
            TagLayout(exclude=("perf/",)), "perf/cpu_util_percent", None, id="exclude group/"
        ),
        pytest.param(
            TagLayout(exclude=("perf",)), "perfect", "metrics/perfect", id="prefix is a group"
        ),
        pytest.param(
            TagLayout(exclude=("env_runners/*_max",)),
            "env_runners/episode_len_max",
            None,
            id="exclude glob",
        ),
        pytest.param(
            TagLayout(include=("env_runners/episode_len_max",), exclude=("env_runners",)),
            "env_runners/episode_len_max",
            "env_runners/episode_len_max",
            id="include wins",
        ),
        pytest.param(
            TagLayout(named=("env_runners/episode_len_max",), exclude=("env_runners",)),
            "env_runners/episode_len_max",
            "0_spec/env_runners/episode_len_max",
            id="the spec's keys always",
        ),
    ],
)
def test_keys_are_grouped_and_bookkeeping_and_timers_left_out(layout, key, tag) -> None:
    assert layout.tag(key) == tag


def test_a_result_is_written_the_spec_keys_first_numbers_only() -> None:
    result = {
        "env_runners": {"episode_return_mean": 21.5, "episode_len_max": float("nan")},
        "learners": {"default_policy": {"entropy": 0.6}},
        "training_iteration": 2,
        "done": False,
        "hostname": "vm",
        "config": {"lr": 0.1},
    }
    assert list(RLLIB.shown(flat_result(result)).items()) == [
        ("0_spec/env_runners/episode_return_mean", 21.5),
        ("0_spec/training_iteration", 2.0),
        ("learners/default_policy/entropy", 0.6),
    ]


TB_SPEC = """
metric: mean_accuracy
mode: max
tensorboard: {include: timers}
experiments:
  inherits:
    run: my_func
    stop: {training_iteration: 2}
    expect: {mean_accuracy: {min: 0}, max_errored_trials: 0}
    config: {alpha: 0.5, beta: 1}
  own:
    run: my_func
    tensorboard: {exclude: [timesteps_*, "*_s"]}
    config: {alpha: 0.5, beta: 1}
"""


def test_the_spec_key_is_inherited_and_overridden(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(TB_SPEC)
    inherits, own = make_plan(spec.load(tmp_path / "spec.yaml")).experiments
    assert TagLayout.for_experiment(inherits) == TagLayout(
        named=("mean_accuracy", "training_iteration"), include=("timers",)
    )
    # An experiment's own `tensorboard` replaces the file's.
    assert TagLayout.for_experiment(own) == TagLayout(
        named=("mean_accuracy",), exclude=("timesteps_*", "*_s")
    )
    # HParams shows only metrics TensorBoard has: not my_func's excluded timesteps_total.
    assert metric_keys(inherits) == ("mean_accuracy", "training_iteration", "timesteps_total")
    assert metric_keys(own) == ("mean_accuracy",)


@pytest.mark.parametrize(
    ("written", "path", "words"),
    [
        pytest.param(
            "tensorboard: timers",
            "tensorboard",
            ["must be a mapping", "allowed: include, exclude"],
            id="not a mapping",
        ),
        pytest.param(
            "tensorboard: {includes: [timers]}",
            "tensorboard.includes",
            ["unknown key 'includes'", "did you mean 'include'"],
            id="misspelt",
        ),
        pytest.param(
            "tensorboard: {include: 3}",
            "tensorboard.include",
            ["a group prefix or a glob, or a list of them", "got 3", "(timers)"],
            id="not a list",
        ),
        pytest.param(
            "tensorboard: {exclude: [timers, 'a b']}",
            "tensorboard.exclude.1",
            ["a group prefix or a glob, but got 'a b'", "no spaces"],
            id="space",
        ),
        pytest.param(
            "tensorboard: {exclude: ['']}", "tensorboard.exclude.0", ["but got ''"], id="empty"
        ),
    ],
)
def test_a_bad_tensorboard_key_is_refused_in_one_line(cli, tmp_path, written, path, words) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        f"{written}\nexperiments:\n  e: {{run: my_func, config: {{alpha: 1, beta: 1}}}}\n"
    )
    before = sorted(tmp_path.rglob("*"))
    refused(cli("validate", spec_file), *words, file=spec_file, path=path)
    assert sorted(tmp_path.rglob("*")) == before


def test_tunes_own_tensorboard_logger_is_not_added() -> None:
    """TrialBoard is the run's one TensorBoard logger; Tune's CSV and JSON loggers stay, even
    with Tune's automatic loggers turned off."""
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, TBXLoggerCallback
    from ray.tune.utils.callback import _create_default_callbacks

    from tune_app.tuner import AUTO_LOGGERS_ENV, _callbacks, given_loggers_only

    ep = make_plan(spec.load(SEARCH_SPACES / "grid.yaml")).experiments[0]
    for auto in ("0", "1", None):
        with pytest.MonkeyPatch.context() as patch:
            if auto is None:
                patch.delenv(AUTO_LOGGERS_ENV, raising=False)
            else:
                patch.setenv(AUTO_LOGGERS_ENV, auto)
            with given_loggers_only():  # as the runner fits a Tuner
                callbacks = _create_default_callbacks(_callbacks(ep))
            assert os.environ.get(AUTO_LOGGERS_ENV) == auto  # the user's setting is back
        kinds = [
            type(c)
            for c in callbacks
            if isinstance(
                c, TBXLoggerCallback | CSVLoggerCallback | JsonLoggerCallback | TrialBoard
            )
        ]
        assert sorted(k.__name__ for k in kinds) == [
            "CSVLoggerCallback",
            "JsonLoggerCallback",
            "TrialBoard",
        ]


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
    # Its row, named by its id as analyze and its folder spell it.
    assert started[metadata.SESSION_START_INFO_TAG].group_name == "fake_00000"
    experiment = started[metadata.EXPERIMENT_TAG]
    assert [h.name for h in experiment.hparam_infos] == ["alpha", "act"]
    # The trial's score (how the summary ranks it) first, then the metrics.
    assert [m.name.tag for m in experiment.metric_infos] == [
        "tune_app/score",
        "0_spec/mean_accuracy",
        "0_spec/training_iteration",
    ]
    assert experiment.metric_infos[0].display_name == "score: mean_accuracy (last value)"

    for step, accuracy in enumerate([1.5, 0.5], 1):
        result = {
            "mean_accuracy": accuracy,
            "loss": 1 / step,
            "training_iteration": step,
            "time_total_s": 0.5,
            "done": False,
            "iterations_since_restore": step,
            "config": {"alpha": 0.4},
        }
        board.on_trial_result(0, [trial], trial, result)
    trial.last_result = result
    board.on_trial_complete(0, [trial], trial)
    ended = _hparams(tmp_path / "trial")[metadata.SESSION_END_INFO_TAG]
    assert ended.status == api_pb2.STATUS_SUCCESS
    events = EventAccumulator(str(tmp_path / "trial"))
    events.Reload()
    # The spec's metric and stop key first; no bookkeeping (done, iterations_since_restore).
    assert set(events.Tags()["scalars"]) == {
        "0_spec/mean_accuracy",
        "0_spec/training_iteration",
        "metrics/loss",
        "metrics/time_total_s",
        "tune_app/score",
    }
    assert [e.value for e in events.Scalars("0_spec/mean_accuracy")] == [1.5, 0.5]
    assert [e.value for e in events.Scalars("tune_app/score")] == [1.5, 0.5]  # scope: last


def test_each_trial_writes_the_hparams_columns_of_every_experiment_run_with_it(
    tmp_path: Path,
) -> None:
    """TensorBoard shows one HParams experiment for a folder, the first it reads: every trial's
    holds every experiment's columns and metrics. A path searched two ways has no domain, which
    would hide the other experiment's trials; a metric named two ways is named by its tag."""
    (tmp_path / "spec.yaml").write_text(
        "experiments:\n"
        "  a: {run: my_func, config: {alpha: {grid_search: [0.2, 0.4]}, beta: 1}}\n"
        "  b:\n    run: my_func\n    metric: timesteps_total\n    mode: min\n"
        "    config: {alpha: {choice: [0.5, 0.6]}, beta: {uniform: [1, 2]}}\n"
    )
    plan = make_plan(spec.load(tmp_path / "spec.yaml"), storage_path=str(tmp_path / "out"))
    for ep in plan.experiments:
        board = TrialBoard.for_experiment(ep, plan.experiments)
        trial = FakeTrial(str(tmp_path / ep.name), {"alpha": 0.5, "beta": 1.5})
        board.on_trial_start(0, [trial], trial)
        board.writers.pop(trial).close()
        written = _hparams(tmp_path / ep.name, metadata.EXPERIMENT_TAG)[metadata.EXPERIMENT_TAG]
        columns = {h.name: h.WhichOneof("domain") for h in written.hparam_infos}
        assert columns == {"alpha": None, "beta": "domain_interval"}
        metrics = {m.name.tag: m.display_name for m in written.metric_infos}
        assert metrics == {
            "tune_app/score": "tune_app/score",
            "0_spec/mean_accuracy": "mean_accuracy",  # a's metric, under its spec group
            "metrics/timesteps_total": "timesteps_total",
            "0_spec/timesteps_total": "timesteps_total",  # b's
            "metrics/mean_accuracy": "mean_accuracy",
        }


def test_a_trial_that_goes_back_shows_what_results_jsonl_keeps(tmp_path: Path) -> None:
    """Killed after iteration 3 and resumed by a new process (a new board, a new events file)
    from iteration 1, then restored in-process to iteration 2: TensorBoard shows each step once,
    the latest value, as results.jsonl keeps them."""
    first = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.4, "act": "tanh", "beta": 1})

    def report(board: TrialBoard, step: int, accuracy: float) -> None:
        result = {"mean_accuracy": accuracy, "training_iteration": step, "config": {}}
        board.on_trial_result(0, [trial], trial, result)

    first.on_trial_start(0, [trial], trial)
    for step in (1, 2, 3):
        report(first, step, step / 10)
    first.writers[trial].close()  # the kill: what was written stays
    second = pickle.loads(pickle.dumps(first))  # Tune restores its callbacks on resume
    second.on_trial_start(0, [trial], trial)
    report(second, 1, 0.5)
    report(second, 2, 0.6)
    report(second, 3, 0.7)
    report(second, 2, 0.8)  # restored from the checkpoint of iteration 1
    trial.last_result = {"mean_accuracy": 0.8}
    second.on_trial_complete(0, [trial], trial)
    events = EventAccumulator(str(tmp_path / "trial"))
    events.Reload()
    shown = [(e.step, e.value) for e in events.Scalars("0_spec/mean_accuracy")]
    assert shown == [(1, pytest.approx(0.5)), (2, pytest.approx(0.8))]
    scores = [(e.step, e.value) for e in events.Scalars("tune_app/score")]
    assert scores == [(1, pytest.approx(0.5)), (2, pytest.approx(0.8))]


def test_a_resumed_run_writes_again_a_trial_whose_events_the_kill_lost(tmp_path: Path) -> None:
    """A trial ended in a killed run before its events reached the disk (they are flushed every
    FLUSH_S): the resumed run writes them from results.jsonl when the experiment ends."""
    first = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.4, "act": "tanh", "beta": 1})
    first.on_trial_start(0, [trial], trial)
    first.writers[trial].close()
    for events_file in (tmp_path / "trial").glob("events.out.tfevents.*"):
        events_file.unlink()  # nothing of it reached the disk
    assert first.results is not None
    first.results.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"trial_id": trial.trial_id, "training_iteration": i, "mean_accuracy": v}
        for i, v in [(1, 0.1), (2, 0.2), (1, 0.3), (2, 0.4), (3, 0.5)]  # went back once
    ]
    first.results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    second = pickle.loads(pickle.dumps(first))  # Tune restores its callbacks on resume
    trial.status = "TERMINATED"  # ended in the killed run: not started again
    trial.last_result = rows[-1]
    second.on_experiment_end([trial])
    events = EventAccumulator(str(tmp_path / "trial"))
    events.Reload()
    shown = [(e.step, e.value) for e in events.Scalars("0_spec/mean_accuracy")]
    assert shown == [(1, pytest.approx(0.3)), (2, pytest.approx(0.4)), (3, pytest.approx(0.5))]
    assert metadata.SESSION_END_INFO_TAG in _hparams(tmp_path / "trial")
    third = pickle.loads(pickle.dumps(second))  # resumed again: nothing to write now
    third.on_experiment_end([trial])
    assert len(list((tmp_path / "trial").glob("events.out.tfevents.*"))) == 1


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
    assert restored.writers == {} and restored.hparams == board.hparams
    board.on_trial_complete(0, [trial], trial)


def test_a_pickle_from_before_step_scores_resumes_each_trials_score(tmp_path: Path) -> None:
    """Runs begun before the scores were StepScores pickled each trial's (step, value) list."""
    board = _board(tmp_path)
    state = board.__getstate__()
    state["scored"] = {"t1": [(1, 0.5), (2, 0.9), (3, 0.7)]}
    old = TrialBoard.__new__(TrialBoard)
    old.__setstate__(state)
    scored = old.scored["t1"]
    assert isinstance(scored, scoring.StepScore) and list(scored.steps) == [1, 2, 3]
    assert scored.value == scoring.score([0.5, 0.9, 0.7], board.scope, board.mode)
    scored.add(2, 0.1)  # a restore to step 2 drops steps 2 and 3
    assert list(scored.values) == [0.5, 0.1]
    assert pickle.loads(pickle.dumps(old)).scored["t1"].value == scored.value


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
    board.writers.pop(running).close()
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

    def scalar_tags(self) -> dict[str, list[str]]:
        """Run -> its scalar tags, as the Time Series dashboard gets them."""
        return self.get("data/plugin/timeseries/tags")["scalars"]["runTagInfo"]


@contextlib.contextmanager
def _serve(
    folder: Path, stderr: Path, loaded: Any, port: tuple[str, ...] = ("--port", "0")
) -> Iterator[Served]:
    """`tune_app tensorboard` on `folder`, once `loaded(served)` holds (60 s at most)."""
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "tune_app", "tensorboard", str(folder), *port],
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
        while not loaded(board):
            assert time.monotonic() < deadline, "TensorBoard did not load the runs in 60 s"
            time.sleep(0.5)
        yield board
    finally:
        Served("", process, stderr).stop()
        process.stdout.close()


@pytest.fixture(scope="module")
def served(board_run, tmp_path_factory) -> Iterator[Served]:
    """`tune_app tensorboard` on the run's folder, once every trial's data is loaded."""
    stderr = tmp_path_factory.mktemp("served") / "stderr.txt"
    # Three trials and the one left running.
    with _serve(board_run, stderr, lambda board: len(board.session_groups()) >= 4) as board:
        yield board


_NUMBER_REST = re.compile(r"[0-9]*(\.[0-9]*)?([eE][-+]?[0-9]*)?")  # what follows a digit


def _compare_tags(a: str, b: str) -> int:
    """TensorBoard's order of tags (`compareTagNames` of its frontend), by which it orders its
    groups: digits (compared as numbers) and `/` before any other character."""

    def first(c: str) -> bool:
        return c == "/" or "0" <= c <= "9"

    i = j = 0
    while True:
        if i == len(a) or j == len(b):
            return (i < len(a)) - (j < len(b))
        if "0" <= a[i] <= "9" and "0" <= b[j] <= "9":
            m, n = _number_end(a, i), _number_end(b, j)
            x, y = _number(a[i:m]), _number(b[j:n])
            if x != y and not (math.isnan(x) or math.isnan(y)):
                return -1 if x < y else 1
            i, j = m, n
            continue
        if first(a[i]) != first(b[j]):
            return -1 if first(a[i]) else 1
        if not first(a[i]) and a[i] != b[j]:
            return -1 if a[i] < b[j] else 1
        i, j = i + 1, j + 1


def _number_end(text: str, start: int) -> int:
    """Where the number at `start` ends: digits, then a `.` part, then an exponent."""
    return _NUMBER_REST.match(text, start + 1).end()  # it matches the empty string too


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # `1e`: JavaScript's NaN
        return math.nan


def _groups(tags: list[str]) -> list[str]:
    """The tags' groups, in the order TensorBoard's Time Series dashboard shows them."""
    ordered = sorted(tags, key=functools.cmp_to_key(_compare_tags))
    return list(dict.fromkeys(tag.split("/", 1)[0] for tag in ordered))


def _rllib_result(step: int) -> dict[str, Any]:
    """A result shaped as PPO's on RLlib's new API stack, a few of each kind of its ~100 keys."""
    connector_timers = {"timers": {"connectors": {"numpy_to_tensor": 1e-5}}}
    return {
        "env_runners": {
            "episode_return_mean": 20.0 + step,
            "num_env_steps_sampled": 400,
            "env_step_timer": 1e-4,
            "env_to_module_connector": connector_timers,
        },
        "learners": {
            "default_policy": {"total_loss": 1.0 / step},
            "__all_modules__": {"learner_connector": connector_timers},
        },
        "timers": {"training_iteration": 1.2, "env_runner_sampling_timer": 0.9},
        "fault_tolerance": {"num_healthy_workers": 1},
        "perf": {"cpu_util_percent": 50.0},
        "num_env_steps_sampled_lifetime": 400 * step,
        **{k: step for k in ("training_iteration", "iterations_since_restore", "pid")},
        **{k: 1.2 * step for k in ("time_this_iter_s", "time_total_s", "time_since_restore")},
        **{k: False for k in ("done", "should_checkpoint")},
        "timestamp": 1_700_000_000 + step,
        "hostname": "vm",
        "config": {"lr": 1e-3},
    }


def test_served_tags_put_the_metric_first_and_timers_only_when_asked(tmp_path: Path) -> None:
    """Two RLlib-like trials, one with `tensorboard: {include: [timers]}`, as TensorBoard shows
    them: the metric's group first, no bookkeeping, RLlib's groups, timers only where asked."""
    metric = "env_runners/episode_return_mean"
    named = (metric, "training_iteration")
    layouts = {
        "default": TagLayout(named=named),
        "timers": TagLayout(named=named, include=("timers",)),
    }
    for number, (run, layout) in enumerate(layouts.items()):
        hparams = {"lr": Domain("loguniform", (1e-4, 1e-2))}
        board = TrialBoard(hparams, named, metric, layout=layout)
        trial = FakeTrial(str(tmp_path / "e" / run), {"lr": 1e-3}, f"ab12c_0000{number}")
        board.on_trial_start(0, [trial], trial)
        for step in (1, 2):
            board.on_trial_result(0, [trial], trial, _rllib_result(step))
        trial.last_result = _rllib_result(2)
        board.on_trial_complete(0, [trial], trial)
    (tmp_path / "e" / "run.json").write_text("{}")  # what `tune_app tensorboard` looks for

    def loaded(served: Served) -> bool:
        tags = served.scalar_tags()
        return all("tune_app/score" in tags.get(run, ()) for run in layouts)

    with _serve(tmp_path / "e", tmp_path / "stderr.txt", loaded) as served:
        tags = served.scalar_tags()
        rows = {g["name"] for g in served.session_groups()}
    assert rows == {"ab12c_00000", "ab12c_00001"}  # one row per trial, named by its id
    for shown in tags.values():
        groups = _groups(shown)
        assert groups[0] == SPEC_GROUP and f"{SPEC_GROUP}/{metric}" in shown
        assert {"env_runners", "learners", "fault_tolerance", "perf", "metrics"} <= set(groups)
        assert {f"metrics/{key}" for key in BOOKKEEPING}.isdisjoint(shown)
        assert f"{SPEC_GROUP}/training_iteration" in shown  # a stop key, so shown
        assert f"env_runners/{metric}" not in shown and metric not in shown  # once, first
    assert not [t for t in tags["default"] if "timer" in t]
    assert {t for t in tags["timers"] if "timer" in t} == {
        "timers/training_iteration",
        "timers/env_runner_sampling_timer",
    }


def _trials(folder: Path) -> list[dict[str, Any]]:
    trials = json.loads((folder / "summary.json").read_text())["trials"]
    assert len(trials) == 3
    return trials


def test_it_serves_on_localhost_a_free_port(served: Served) -> None:
    assert served.url.startswith("http://127.0.0.1:")


def test_every_reported_metric_is_a_scalar_of_its_trial(board_run, served: Served) -> None:
    tags = served.scalar_tags()
    for trial in _trials(board_run):
        if trial["status"] == "ERROR":
            assert trial["path"] not in tags  # it failed before reporting
            continue
        # The spec's metric and stop key, the trial's own keys and Tune's timing; no `done`,
        # `should_checkpoint`, `iterations_since_restore`, `time_since_restore`, `timestamp`...
        assert set(tags[trial["path"]]) == {
            "0_spec/mean_accuracy",
            "0_spec/training_iteration",
            "metrics/loss",
            "metrics/time_this_iter_s",
            "metrics/time_total_s",
            "tune_app/score",
        }


def test_the_first_group_served_is_the_spec_metric(board_run, served: Served) -> None:
    tags = served.scalar_tags()
    shown = [tag for run in tags.values() for tag in run]
    assert _groups(shown) == [SPEC_GROUP, "metrics", "tune_app"]
    assert f"{SPEC_GROUP}/mean_accuracy" in shown


def test_hparams_columns_are_the_searched_parameters_and_the_metric(served: Served) -> None:
    experiment = served.get("data/plugin/hparams/experiment", {"experimentName": ""})
    columns = {h["name"]: h for h in experiment["hparamInfos"]}
    assert set(columns) == {"alpha", "act"}  # not beta, which is fixed
    assert columns["alpha"]["domainDiscrete"] == [0.2, 0.4, 0.6]
    assert columns["act"]["domainDiscrete"] == ["relu", "tanh"]
    metrics = [m["name"]["tag"] for m in experiment["metricInfos"]]
    # The score the summary ranks trials by comes first.
    assert metrics == ["tune_app/score", "0_spec/mean_accuracy", "0_spec/training_iteration"]


def test_every_trial_is_listed_with_its_values_status_and_metric(board_run, served) -> None:
    groups = {g["name"]: g for g in served.session_groups()}
    status = {"TERMINATED": "STATUS_SUCCESS", "ERROR": "STATUS_FAILURE"}
    # One row per trial, named by its id as analyze spells it (`3c0de_00001`).
    names = [t["trial_id"] for t in _trials(board_run)]
    assert set(groups) == {*names, "fake_00000"} and len(names) == 3
    for trial in _trials(board_run):
        group = groups[trial["trial_id"]]
        assert group["hparams"] == {k: trial["config"][k] for k in ("alpha", "act")}
        (session,) = group["sessions"]
        assert session["status"] == status[trial["status"]]
        values = {m["name"]["tag"]: m["value"] for m in session["metricValues"]}
        if trial["status"] == "ERROR":
            assert trial["config"]["alpha"] == 0.6 and values == {}
        else:
            assert values["0_spec/mean_accuracy"] == pytest.approx(trial["metric"], rel=1e-6)
            assert values["0_spec/training_iteration"] == 3
    (running,) = groups["fake_00000"]["sessions"]  # the one left running
    assert running["status"] == "STATUS_UNKNOWN" and not running.get("endTimeSecs")
    assert groups["fake_00000"]["hparams"] == {"alpha": 0.4, "act": "relu"}


def test_ctrl_c_stops_it_with_exit_130_and_no_traceback(served: Served) -> None:
    # Last in this module: the other tests share the server this stops.
    assert served.stop() == 130
    err = served.stderr.read_text()
    assert "Traceback" not in err and err.strip().endswith("interrupted (SIGINT)")


@pytest.mark.parametrize(
    ("where", "args", "words"),
    [
        pytest.param("missing/deeper", (), "does not exist", id="missing"),
        pytest.param("other", (), "holds no tune_app run", id="not a run"),
        pytest.param("run", ("--port", "70000"), "--port must be 0 to 65535", id="bad port"),
        pytest.param("run", ("--host", ""), "would serve on every network", id="empty host"),
    ],
)
def test_a_folder_that_is_no_run_is_refused_in_one_line(cli, tmp_path, where, args, words) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not a run")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    before = sorted(tmp_path.rglob("*"))
    result = cli("tensorboard", tmp_path / where, *args)
    refused(result, words)
    assert result.out == ""
    assert sorted(tmp_path.rglob("*")) == before


def test_a_port_in_use_is_refused_in_one_line(cli, tmp_path) -> None:
    (tmp_path / "run.json").write_text("{}")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = cli("tensorboard", tmp_path, "--port", port)
    refused(result, f"cannot serve on 127.0.0.1:{port}", "--port 0")


def test_the_port_is_tensorboards_own_or_a_free_one_said_so() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert pick_port("127.0.0.1", None, default=port) == (
            0,
            f"port {port} is in use (another TensorBoard?); serving on a free port instead "
            "(--port N picks one)",
        )
    assert pick_port("127.0.0.1", None, default=port) == (port, None)  # free again
    assert pick_port("127.0.0.1", 0) == (0, None) and DEFAULT_PORT == 6006


def test_a_host_that_names_no_address_is_one_line(cli, tmp_path) -> None:
    """A mistyped --host was taken for a busy port 6006, and TensorBoard then ended in its
    resolver's bare 'Name or service not known'."""
    (tmp_path / "run.json").write_text("{}")
    refused(cli("tensorboard", tmp_path, "--host", "0.0.0.0x"), "cannot serve on 0.0.0.0x:0")


def test_sigterm_stops_the_server_and_its_children(tmp_path: Path) -> None:
    """`tune-app tensorboard DIR &` then `kill PID`: the server and TensorBoard's data server
    (its child process) are gone."""
    (tmp_path / "run.json").write_text("{}")
    with _serve(tmp_path, tmp_path / "stderr.txt", lambda served: True) as served:
        pid = served.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children")
        deadline = time.monotonic() + 30
        while not children.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.2)  # the data server starts once the logdir is read
        kids = [int(k) for k in children.read_text().split()]
        assert kids, "no data server started"
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=20) == 143
    for kid in kids:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{kid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{kid}").exists() or "Z" in _state(kid), f"child {kid} left"
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


# ---- a live run: TensorBoard started before it follows it -----------------------------------


def _served_steps(served: Served, tag: str) -> dict[str, int]:
    """Trial folder name -> the last step TensorBoard serves of `tag`, for each trial it has
    loaded."""
    steps = {}
    for run, tags in served.scalar_tags().items():
        if tag in tags:
            query = urllib.parse.urlencode({"run": run, "tag": tag})
            points = served.get(f"data/plugin/scalars/scalars?{query}")
            if points:
                steps[Path(run).name] = max(step for _, step, _ in points)
    return steps


@pytest.mark.e2e
def test_a_server_started_before_a_run_follows_it_to_the_end(tmp_path: Path) -> None:
    """`tensorboard` on a folder no run has written yet, then a search: each trial's results are
    served within 30 s of being logged while the run lives, and its last step once it ends, its
    HParams row with them. (Tune's copies of its staging folder replace a file whole, and a
    server that had the old file open served it frozen.)"""
    from .runs import grid_spec, started

    user_module("checkpointed_steps.py", tmp_path, "steps.py")
    (tmp_path / "spec.yaml").write_text(grid_spec("steps:train", (1, 2, 3), steps=10, sleep=1.0))
    out = tmp_path / "out"
    results = out / "e" / "results.jsonl"
    tag = f"{SPEC_GROUP}/score"
    lags: dict[tuple[str, int], float] = {}  # (trial, step) -> seconds from logged to served
    live_steps: set[int] = set()  # steps served while the run lived, short of the last
    with _serve(out, tmp_path / "stderr.txt", lambda served: True) as served:
        assert "no run in" in served.stderr.read_text()
        proc = started("run", tmp_path / "spec.yaml", "--storage-path", out, cwd=tmp_path)
        try:
            logged: dict[tuple[str, int], float] = {}
            while proc.poll() is None or len(lags) < len(logged):
                now = time.time()
                if results.exists():
                    for line in results.read_text().splitlines():
                        row = json.loads(line)
                        key = (row["trial_id"], row["training_iteration"])
                        logged.setdefault(key, row["logged_at"])
                shown = {  # trial id -> its last step served
                    trial: step
                    for folder, step in _served_steps(served, tag).items()
                    for trial, _ in logged
                    if f"_{trial}_" in folder
                }
                for (trial, step), at in logged.items():
                    if (trial, step) not in lags and shown.get(trial, 0) >= step:
                        lags[(trial, step)] = now - at
                if proc.poll() is None:
                    live_steps.update(s for s in shown.values() if s < 10)
                late = [k for k, at in logged.items() if k not in lags and now - at > 30]
                assert not late, f"not served 30 s after being logged: {late}"
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
            _, err = proc.communicate()
        assert proc.returncode == 0, err
        assert len({t for t, _ in lags}) == 3 and max(s for _, s in lags) == 10
        assert live_steps, "nothing was served while the run lived"
        deadline = time.monotonic() + 30
        while True:
            groups = served.session_groups()
            ended = [g for g in groups if g["sessions"][0]["status"] == "STATUS_SUCCESS"]
            if len(ended) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert len(ended) == 3, groups


def test_a_results_scalars_are_one_event_and_read_back_under_each_tag(tmp_path: Path) -> None:
    """A result costs one record however many keys it shows: the scalars and the score ride in
    one summary, and TensorBoard's reader shows each under its own tag at the result's step."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    board = _board(tmp_path)
    trial = FakeTrial(str(tmp_path / "trial"), {"alpha": 0.4, "act": "tanh", "beta": 1})
    board.on_trial_start(0, [trial], trial)
    for step in (1, 2):
        result = {"mean_accuracy": step / 10, "loss": {"a": 1.0 * step, "b": 2.0}}
        board.on_trial_result(0, [trial], trial, {**result, "training_iteration": step})
    board.writers[trial].close()
    (events_file,) = (tmp_path / "trial").glob("events.out.tfevents.*")
    scalar_events = [
        e for e in EventFileLoader(str(events_file)).Load() if e.summary.value and e.step
    ]
    # The spec's metric and its stop key, the two loss keys, the score.
    assert [len(e.summary.value) for e in scalar_events] == [5, 5]
    accumulated = EventAccumulator(str(tmp_path / "trial"))
    accumulated.Reload()
    for tag, values in {
        "0_spec/mean_accuracy": [0.1, 0.2],
        "0_spec/training_iteration": [1.0, 2.0],
        "loss/a": [1.0, 2.0],
        "loss/b": [2.0, 2.0],
        "tune_app/score": [0.1, 0.2],
    }.items():
        shown = [(e.step, e.value) for e in accumulated.Scalars(tag)]
        assert shown == [(1, pytest.approx(values[0])), (2, pytest.approx(values[1]))], tag


@pytest.mark.parametrize(
    ("values", "interval"),
    [
        pytest.param(None, None, id="a name alone"),
        pytest.param([0.3, 1.0, 0.1], None, id="numbers"),
        pytest.param(["tanh", "relu"], None, id="strings"),
        pytest.param([True, False], None, id="booleans"),
        pytest.param(None, (1e-4, 0.1), id="interval"),
    ],
)
def test_hparams_summaries_are_the_plugins_own_byte_for_byte(monkeypatch, values, interval):
    """The app builds the HParams summaries from the plugin's protos, without importing the
    plugin's builders (TensorFlow's stub with them): what those builders make (byte for byte
    but for the order of a map)."""
    from tensorboard.plugins.hparams import summary_v2

    monkeypatch.setattr(time, "time", lambda: 1_795_000_000.25)
    domain = (
        summary_v2.Discrete(list(values))
        if values
        else summary_v2.RealInterval(*interval)
        if interval
        else None
    )
    theirs = summary_v2.hparams_config_pb(
        hparams=[summary_v2.HParam("model.lr", domain), summary_v2.HParam("act")],
        metrics=[summary_v2.Metric("0_spec/score", display_name="score")],
        time_created_secs=1_795_000_000.0,
    )
    ours = hp.experiment(
        [hp.column("model.lr", values, interval), hp.column("act")],
        {"0_spec/score": "score"},
        1_795_000_000.0,
    )
    assert ours.SerializeToString() == theirs.SerializeToString()

    import numpy as np

    row = {"model.lr": 0.1, "act": "tanh", "flag": True, "n": 3.0, "k": np.int64(4), "b": np.True_}
    theirs = summary_v2.hparams_pb(row, trial_id="f1c2e_00001", start_time_secs=time.time())
    ours = hp.session_start(row, "f1c2e_00001")
    # Its values are a protobuf map, whose order in bytes is not fixed: equal once parsed.
    (value,), (their_value,) = ours.value, theirs.value
    info, their_info = (
        metadata.parse_session_start_info_plugin_data(v.metadata.plugin_data.content)
        for v in (value, their_value)
    )
    assert info == their_info
    assert info.hparams["b"].bool_value is True and info.hparams["k"].number_value == 4
    value.metadata.plugin_data.content = their_value.metadata.plugin_data.content
    assert value.SerializeToString() == their_value.SerializeToString()  # tag, tensor, plugin


def test_a_session_end_is_read_as_the_plugin_reads_it(monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 1_795_000_000.25)
    for failed, status in [(True, api_pb2.STATUS_FAILURE), (False, api_pb2.STATUS_SUCCESS)]:
        (value,) = hp.session_end(failed).value
        assert value.tag == metadata.SESSION_END_INFO_TAG
        assert value.tensor.SerializeToString() == metadata.NULL_TENSOR.SerializeToString()
        assert value.metadata.plugin_data.plugin_name == metadata.PLUGIN_NAME
        info = metadata.parse_session_end_info_plugin_data(value.metadata.plugin_data.content)
        assert (info.status, info.end_time_secs) == (status, 1_795_000_000.25)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_a_record_is_framed_as_tensorboards_own_writer_frames_it(data: bytes) -> None:
    """The app frames each event itself, its checksums in C; byte for byte as TensorBoard's
    RecordWriter does, whose reader checks them."""
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    theirs = io.BytesIO()
    RecordWriter(theirs).write(data)
    assert events.record(data) == theirs.getvalue()


def test_a_trials_events_files_sort_in_the_order_they_were_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorBoard reads a folder's events files in the order of their names: the tenth file a
    process makes in one second sorts after the ninth (a restart's file after the one it
    replays over)."""
    from tune_app.tensorboard import events

    monkeypatch.setattr(events.time, "time", lambda: 1_800_000_000.0)  # all in one second
    made = []
    for _ in range(12):  # the process's count crosses a power of ten on the way
        before = set(tmp_path.glob("events.out.tfevents.*"))
        events.EventWriter(str(tmp_path)).close()
        (new,) = set(tmp_path.glob("events.out.tfevents.*")) - before
        made.append(new.name)
    assert sorted(made) == made
