"""The contract every registered trainable keeps: its smoke config runs, it reports what it
declares, its bundles follow `simulations`, and the same seed gives the same results."""

from __future__ import annotations

import pytest
import yaml

from tune_app import spec
from tune_app.contract import AUTO_METRICS
from tune_app.plan.make import make_plan
from tune_app.registry import registered
from tune_app.runner import RunOptions, run

from .conftest import results_of

NAMES = sorted(registered())


def test_the_registry_finds_every_trainable_module():
    assert {"my_func", "es_cartpole"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_declaration_is_complete(name):
    info = registered()[name]
    assert info.doc and info.fn.__doc__
    assert info.mode in ("min", "max")
    assert info.metric in info.metrics
    assert not set(info.metrics) & set(AUTO_METRICS)
    for knob in info.knobs:
        assert knob.doc, knob.name
        assert knob.default is None or isinstance(knob.default, knob.type), knob.name
    knobs = {k.name for k in info.knobs}
    assert set(info.smoke) <= knobs
    # A smoke run must be possible from the declaration alone: required knobs have smoke values.
    assert {k.name for k in info.knobs if k.default is None} <= set(info.smoke)


def _smoke_spec(write_spec, name, sims):
    info = registered()[name]
    experiment = {"run": name, "stop": {"training_iteration": 2}, "config": dict(info.smoke)}
    if sims is not None:
        experiment["simulations"] = sims
    return write_spec(yaml.safe_dump({"contract": experiment}), f"{name}.yaml")


@pytest.mark.parametrize(
    "name",
    # One in-process run in the first tier; the other trainables' in the second.
    [n if n == "my_func" else pytest.param(n, marks=pytest.mark.slow) for n in NAMES],
)
def test_smoke_run_reports_declared_metrics_and_repeats_with_the_same_seed(
    name, ray_session, write_spec, tmp_path
):
    info = registered()[name]
    sims = 1 if info.simulations else None
    path = _smoke_spec(write_spec, name, sims)
    runs = []
    for attempt in ("a", "b"):
        plan = make_plan(spec.load(path), cpus=2, storage_path=str(tmp_path / attempt))
        (ep,) = plan.experiments
        assert len(ep.bundles) == 1 + (sims or 0)
        assert ep.bundles[0] == {"CPU": info.head_cpu}
        (summary,) = run(plan, RunOptions(verbosity=0))
        assert summary.counts == {"TERMINATED": 1}, summary.trials
        rows = results_of(tmp_path / attempt / "contract")
        assert [r["training_iteration"] for r in rows] == [1, 2]
        for row in rows:
            assert set(info.metrics) <= set(row), set(info.metrics) - set(row)
        runs.append([row[info.metric] for row in rows])
    assert runs[0] == runs[1]


def test_bundles_follow_simulations(write_spec):
    for name in NAMES:
        info = registered()[name]
        for sims in [1, 2] if info.simulations else [0, 1]:
            plan = make_plan(spec.load(_smoke_spec(write_spec, name, sims)), cpus=4)
            (ep,) = plan.experiments
            assert ep.bundles[1:] == ({"CPU": 1.0},) * sims
