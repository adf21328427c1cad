"""CI use: --smoke shrinks any spec, `expect:` decides the exit code, --junit reports both."""

from __future__ import annotations

import json

import pytest
from junitparser import Failure, JUnitXml, Skipped

from tune_app import spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan

from .conftest import SEARCH_SPACES, user_module

BIG_GRID = """
metric: mean_accuracy
mode: max
experiments:
  g:
    run: my_func
    num_samples: 5
    stop: {training_iteration: 50, mean_accuracy: 1000}
    config:
      alpha: {grid_search: [0.1, 0.2, 0.3]}
      beta: {grid_search: [1, 2, 3, 4]}
"""


def test_smoke_cuts_samples_grid_axes_and_iterations(write_spec):
    path = write_spec(BIG_GRID)
    full = make_plan(spec.load(path), cpus=2).experiments[0]
    small = make_plan(spec.load(path), cpus=2, smoke=True).experiments[0]
    assert full.trials == 3 * 4 * 5
    assert small.trials == 2 * 2 * 2
    assert small.experiment.stop == {"training_iteration": 2, "mean_accuracy": 1000}
    assert small.iterations == 2 * 8
    assert small.folder.local == full.folder.local.parent / "smoke" / "g"
    assert small.experiment.config["alpha"].args == (0.1, 0.2)


def test_smoke_gives_rllib_one_env_runner_and_tiny_batches(write_spec):
    path = write_spec("e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_workers: 2, lr: 0.01}\n")
    ep = make_plan(spec.load(path), cpus=2, smoke=True).experiments[0]
    config = ep.experiment.config
    assert config["num_env_runners"] == 1 and config["train_batch_size"] <= 256
    assert config["lr"] == 0.01
    assert ep.bundles == ({"CPU": 1.0}, {"CPU": 1.0})


def test_smoke_keeps_searched_keys_the_trainable_would_override(write_spec):
    path = write_spec("e:\n  run: es_cartpole\n  config: {population: {choice: [4, 16]}}\n")
    ep = make_plan(spec.load(path), cpus=2, smoke=True).experiments[0]
    assert ep.experiment.config["population"].kind == "choice"


@pytest.mark.e2e
@pytest.mark.parametrize("path", sorted(SEARCH_SPACES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_runs_under_smoke(path, ray_session, cli, tmp_path):
    result = cli("run", path, "--smoke", "-q", "--storage-path", tmp_path)
    assert result.code == 0, result.err
    plan = make_plan(spec.load(path), cpus=2, storage_path=str(tmp_path), smoke=True)
    for ep in plan.experiments:
        summary = json.loads(ep.folder.summary.read_text())
        assert summary["counts"] == {"TERMINATED": ep.trials}
        assert all(t["iterations"] <= 2 for t in summary["trials"])


def _junit(path):
    suites = list(JUnitXml.fromfile(str(path)))
    return {case.name: case for suite in suites for case in suite}, suites


def test_unmet_expectation_exits_1_and_is_a_junit_failure(ray_session, cli, write_spec, tmp_path):
    user_module("raises.py", tmp_path, "mods.py")
    path = write_spec("""
metric: score
mode: max
expect: {score: {min: 10}}
experiments:
  e:
    run: mods:train
    config: {x: {grid_search: [1, 3]}}
""")
    report = tmp_path / "junit.xml"
    result = cli("run", path, "-q", "--storage-path", tmp_path / "o", "--junit", report)
    assert result.code == 1
    assert "expectation failed: score >= 10; best trial" in result.err
    assert "score = 3" in result.err
    cases, suites = _junit(report)
    assert len(suites) == 1 and suites[0].name == "e"
    assert len(cases) == 2 + 2  # two trials, the errored-trials check, the score bound
    assert suites[0].tests == 4 and suites[0].failures == 1
    failed = [
        name for name, case in cases.items() if any(isinstance(r, Failure) for r in case.result)
    ]
    assert failed == ["score >= 10"]


@pytest.mark.slow  # an in-process run: the second tier
def test_errored_trials_fail_the_run_unless_expect_allows_them(
    ray_session, cli, write_spec, tmp_path
):
    user_module("raises.py", tmp_path, "mods.py")
    text = "e:\n  run: mods:train\n  config: {{x: {{grid_search: [1, 2]}}}}\n{extra}"
    strict = write_spec(text.format(extra=""), "strict.yaml")
    report = tmp_path / "strict.xml"
    result = cli("run", strict, "-q", "--storage-path", tmp_path / "a", "--junit", report)
    assert result.code == 1
    assert "errored trials <= 0; 1 of 2 trials errored" in result.err
    cases, _ = _junit(report)
    trial_failures = [r.message for c in cases.values() for r in c.result if isinstance(r, Failure)]
    assert any("x must not be 2" in m for m in trial_failures)
    lenient = write_spec(text.format(extra="  expect: {max_errored_trials: 1}\n"), "lenient.yaml")
    assert cli("run", lenient, "-q", "--storage-path", tmp_path / "b").code == 0


@pytest.mark.parametrize("smoke", [False, True], ids=["plain", "smoke"])
@pytest.mark.parametrize(
    ("bounds", "where"),
    [
        pytest.param("smoke: {nope: {min: 1}}", "expect.smoke.nope", id="smoke-bound"),
        pytest.param(
            "nope: {min: 1}\n  smoke: {mean_accuracy: {min: 0.5}}", "expect.nope", id="full-bound"
        ),
    ],
)
def test_an_expect_key_never_reported_is_refused_with_or_without_smoke(
    write_spec, smoke, bounds, where
):
    """A plain validate passed a never-reported key of `expect.smoke`, and --smoke one of the
    full run's bounds, which its own bounds replace."""
    path = write_spec(BIG_GRID.replace("experiments:", f"expect:\n  {bounds}\nexperiments:"))
    with pytest.raises(SpecError) as err:
        make_plan(spec.load(path), cpus=2, smoke=smoke)
    assert f"experiments.g.{where}: 'nope' is never reported" in str(err.value)


def test_smoke_skips_metric_bounds_but_keeps_the_errored_check(
    ray_session, cli, write_spec, tmp_path
):
    path = write_spec(
        BIG_GRID.replace("experiments:", "expect: {mean_accuracy: {min: 1e9}}\nexperiments:")
    )
    report = tmp_path / "junit.xml"
    result = cli("run", path, "--smoke", "-q", "--storage-path", tmp_path / "o", "--junit", report)
    assert result.code == 0, result.err
    assert "skipped" in result.out
    cases, _ = _junit(report)
    assert any(isinstance(r, Skipped) for r in cases["mean_accuracy >= 1e+09"].result)
    assert not any(cases["errored trials <= 0"].result)


def test_a_spec_states_the_bounds_its_smoke_run_must_meet(write_spec):
    from tune_app import expect
    from tune_app.rundir.records import RunSummary, TrialOutcome

    path = write_spec(
        BIG_GRID.replace(
            "experiments:",
            "expect:\n  mean_accuracy: {min: 1e9}\n  smoke: {mean_accuracy: {min: 0.5}}\n"
            "experiments:",
        )
    )
    full = make_plan(spec.load(path), cpus=2).experiments[0]
    small = make_plan(spec.load(path), cpus=2, smoke=True).experiments[0]
    assert set(full.experiment.expect.metrics) == {"mean_accuracy"}
    assert small.experiment.expect.metrics["mean_accuracy"].min == 0.5

    def summary(value: float) -> RunSummary:
        best = TrialOutcome("aaaaa_00000", "TERMINATED", {}, value, 2,
                            values={"mean_accuracy": value})  # fmt: skip
        return RunSummary("g", "mean_accuracy", "max", 1.0, trials=[best])

    met = expect.check(small, summary(1.0), smoke=True)
    assert [(o.name, o.passed, o.skipped) for o in met][1] == (
        "mean_accuracy >= 0.5 (smoke)",
        True,
        False,
    )
    (unmet,) = [o for o in expect.check(small, summary(0.1), smoke=True) if not o.passed]
    assert unmet.name == "mean_accuracy >= 0.5 (smoke)" and "0.1" in unmet.message
    # The full run checks its own bound, not the smoke one.
    (bound,) = expect.check(full, summary(1.0))[1:]
    assert bound.name == "mean_accuracy >= 1e+09" and not bound.passed
