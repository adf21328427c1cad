"""A spec whose searcher or scheduler needs a package the default install leaves out is refused
at validate, before Ray starts, with the `pip install` line of the extra that installs it."""

from __future__ import annotations

import sys

import pytest

from tune_app.methods import SCHEDULERS, SEARCHERS

SPEC = """
metric: episode_return_mean
mode: max
search: {search}
scheduler: {scheduler}
experiments:
  exp:
    run: es_cartpole
    num_samples: 2
    stop: {{training_iteration: 4}}
    config:
      lr: {{loguniform: [0.01, 1.0]}}
"""

MISSING = [
    pytest.param(
        "{type: optuna, sampler: tpe}",
        "fifo",
        "optuna",
        "experiments.exp.search",
        ["search: optuna needs the optuna package", 'pip install -e ".[optuna]"'],
        id="optuna",
    ),
    pytest.param(
        "bohb",
        "hyperband",
        "hpbandster",
        "experiments.exp.search",
        ["search: bohb needs the hpbandster package", 'pip install -e ".[bohb]"'],
        id="bohb-hpbandster",
    ),
    pytest.param(
        "bohb",
        "hyperband",
        "ConfigSpace",
        "experiments.exp.search",
        ["search: bohb needs the ConfigSpace package", 'pip install -e ".[bohb]"'],
        id="bohb-configspace",
    ),
    pytest.param(
        "random",
        "{type: pb2, hyperparam_bounds: {lr: [0.01, 1.0]}}",
        "sklearn",
        "experiments.exp.scheduler",
        ["scheduler: pb2 needs the sklearn package", 'pip install -e ".[pb2]"'],
        id="pb2",
    ),
]


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("search, scheduler, blocked, path, words", MISSING)
def test_a_missing_optional_package_is_one_line_naming_its_extra(
    cli, write_spec, tmp_path, monkeypatch, command, search, scheduler, blocked, path, words
):
    monkeypatch.setitem(sys.modules, blocked, None)  # not installed: its import fails
    spec_file = write_spec(SPEC.format(search=search, scheduler=scheduler))
    out = tmp_path / "out"
    result = cli(command, spec_file, "--storage-path", out)
    assert result.code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"error: {spec_file}: {path}: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()


@pytest.mark.parametrize("search, scheduler, blocked, path, words", MISSING)
def test_the_same_spec_validates_with_the_package_installed(
    cli, write_spec, search, scheduler, blocked, path, words
):
    result = cli("validate", write_spec(SPEC.format(search=search, scheduler=scheduler)))
    assert result.code == 0, result.err


def test_every_extra_a_table_names_is_declared_in_pyproject_and_in_test():
    import tomllib
    from pathlib import Path

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    default = " ".join(project["dependencies"])
    for entry in [*SEARCHERS.values(), *SCHEDULERS.values()]:
        if entry.extra is None:
            assert not entry.packages, entry.name
            continue
        assert entry.extra in extras, entry.name
        # the test extra installs everything the suite runs
        assert set(extras[entry.extra]) <= set(extras["test"]), entry.extra
    for moved in ("optuna", "hpbandster", "ConfigSpace", "scikit-learn"):
        assert moved not in default  # the default install leaves them out


def test_the_report_without_scikit_learn_says_how_to_get_parameter_importance(monkeypatch):
    from tune_app.importance import MIN_TRIALS, importances
    from tune_app.rundir.records import TrialOutcome

    monkeypatch.setitem(sys.modules, "sklearn", None)
    trials = [
        TrialOutcome(f"t{i}", "TERMINATED", {"x": i}, float(i), 1, params={"x": i})
        for i in range(MIN_TRIALS + 2)
    ]
    found = importances(trials, ["x"])
    assert found.params == ()
    assert 'pip install -e ".[importance]"' in found.note
