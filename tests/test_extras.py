"""A spec whose searcher or scheduler needs a package the default install leaves out is refused
at validate, before Ray starts, with the `pip install` line of the extra that installs it."""

from __future__ import annotations

import sys

import pytest

from tune_app.methods import SCHEDULERS, SEARCHERS

from .conftest import refused

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
        "{type: optuna, sampler: cmaes}",
        "fifo",
        "cmaes",
        "experiments.exp.search",
        ["search: optuna (sampler cmaes) needs the cmaes package", 'pip install -e ".[optuna]"'],
        id="optuna-cmaes",
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
    refused(cli(command, spec_file, "--storage-path", out), *words, file=spec_file, path=path)
    assert not out.exists()


@pytest.mark.parametrize("search, scheduler, blocked, path, words", MISSING)
def test_the_same_spec_validates_with_the_package_installed(
    cli, write_spec, search, scheduler, blocked, path, words
):
    result = cli("validate", write_spec(SPEC.format(search=search, scheduler=scheduler)))
    assert result.code == 0, result.err


def _named_packages() -> dict[str, set[str]]:
    """Every optional package the tables name (methods, their variants, trackers, trainables),
    with who names it."""
    from tune_app.methods.searchers import OptunaOptions
    from tune_app.registry import registered
    from tune_app.trackers import TRACKERS

    named: dict[str, set[str]] = {}
    for entry in [*SEARCHERS.values(), *SCHEDULERS.values()]:
        packages = entry.packages
        if callable(packages):  # each variant of its options
            variants = [
                OptunaOptions(sampler=s) for s in ("tpe", "nsga2", "cmaes", "random", "qmc")
            ]
            packages = tuple({p for v in variants for p in entry.packages(v)})
        for p in packages:
            named.setdefault(p, set()).add(entry.name)
    for tracker in TRACKERS.values():
        named.setdefault(tracker.module, set()).add(tracker.name)
    for info in registered().values():
        for p in info.packages:
            named.setdefault(p, set()).add(info.name)
    return named


def test_every_optional_package_a_table_names_has_its_extra_in_the_one_table():
    """`run: lcbench` without onnxruntime and `sampler: cmaes` without cmaes passed validate,
    then failed in the trials: no table said they needed them."""
    from tune_app.extras import EXTRAS

    named = _named_packages()
    assert {"onnxruntime", "cmaes", "optuna", "mlflow", "wandb"} <= set(named)
    assert set(named) <= set(EXTRAS), set(named) - set(EXTRAS)


def test_every_extra_the_table_names_is_declared_in_pyproject_and_in_test():
    import tomllib
    from pathlib import Path

    from tune_app.extras import EXTRAS

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    default = " ".join(project["dependencies"])
    for package, extra in EXTRAS.items():
        assert extra in extras, package
        # the test extra installs everything the suite runs
        assert set(extras[extra]) <= set(extras["test"]), extra
    for moved in ("optuna", "hpbandster", "ConfigSpace", "scikit-learn", "cmaes", "onnxruntime"):
        assert moved not in default  # the default install leaves them out


def test_a_trainable_whose_package_is_missing_is_refused_with_its_extra(
    cli, write_spec, tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    spec_file = write_spec("e:\n  run: lcbench\n  stop: {training_iteration: 2}\n")
    for command in ("validate", "run"):
        result = cli(command, spec_file, "--storage-path", tmp_path / "o")
        needs = "e.run: trainable 'lcbench' needs the onnxruntime package"
        refused(result, needs, 'pip install -e ".[bench]"')
    assert not (tmp_path / "o").exists()


def test_the_report_without_scikit_learn_says_how_to_get_parameter_importance(monkeypatch):
    from tune_app.readback.importance import MIN_TRIALS, importances
    from tune_app.rundir.records import TrialOutcome

    monkeypatch.setitem(sys.modules, "sklearn", None)
    trials = [
        TrialOutcome(f"t{i}", "TERMINATED", {"x": i}, float(i), 1, params={"x": i})
        for i in range(MIN_TRIALS + 2)
    ]
    found = importances(trials, ["x"])
    assert found.params == ()
    assert 'pip install -e ".[importance]"' in found.note


BROKEN = [
    pytest.param(
        "search: {type: optuna, sampler: cmaes}\n",
        "es_cartpole",
        "cmaes",
        "experiments.exp.search: search: optuna (sampler cmaes) needs the cmaes package",
        id="sampler",
    ),
    pytest.param(
        "search: {type: optuna, sampler: tpe}\n",
        "es_cartpole",
        "optuna",
        "experiments.exp.search: search: optuna needs the optuna package",
        id="searcher",
    ),
    pytest.param(
        "",
        "lcbench",
        "onnxruntime",
        "experiments.exp.run: trainable 'lcbench' needs the onnxruntime package",
        id="trainable",
    ),
]


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """Make `broken(name)` a package found on sys.path whose import raises RuntimeError."""
    from .conftest import user_module

    site = tmp_path / "site"

    def make(name: str) -> None:
        (site / name).mkdir(parents=True)
        user_module("broken_install.py", site / name, "__init__.py")
        monkeypatch.syspath_prepend(str(site))
        for loaded in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            monkeypatch.delitem(sys.modules, loaded)

    return make


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("search, run, package, where", BROKEN)
def test_a_package_whose_import_raises_is_named_with_its_error_and_the_reinstall_line(
    cli, write_spec, broken, tmp_path, command, search, run, package, where
):
    """A broken install passed validate (the package was found) and failed later with
    "error: RuntimeError: broken install", naming no package."""
    broken(package)
    spec_file = write_spec(
        f"metric: episode_return_mean\nmode: max\n{search}experiments:\n  exp:\n    run: {run}\n"
        "    num_samples: 2\n    config: {lr: {loguniform: [0.01, 1.0]}}\n"
        if run == "es_cartpole"
        else f"experiments:\n  exp:\n    run: {run}\n    stop: {{training_iteration: 2}}\n"
    )
    out = tmp_path / "out"
    line = refused(
        cli(command, spec_file, "--storage-path", out),
        "RuntimeError: broken install",
        f"(at {package}/__init__.py:4)",  # where it raised, short
        f"reinstall it: pip install --force-reinstall --no-deps {package}",
    )
    assert line.startswith(f"error: {spec_file}: {where}, whose import fails: "), line
    assert not out.exists()


def test_an_import_failure_names_the_file_and_line_it_was_raised_at(tmp_path, monkeypatch):
    from tune_app.errors import import_failure

    monkeypatch.chdir(tmp_path)
    (tmp_path / "typo.py").write_text("x = 1\n\ndef train(config)\n    pass\n")
    (tmp_path / "deep.py").write_text("import helper_that_raises\n")
    (tmp_path / "helper_that_raises.py").write_text("\n\nraise KeyError('k')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module, expected in [
        ("typo", "SyntaxError: expected ':' (at typo.py:3)"),
        ("deep", "KeyError: 'k' (at helper_that_raises.py:3)"),  # the frame that raised
    ]:
        with pytest.raises(Exception) as caught:
            __import__(module)
        assert import_failure(caught.value) == expected


def test_a_user_module_whose_import_raises_is_one_line_naming_it(
    cli, write_spec, tmp_path, ray_session
):
    """`run: badmod:train` whose module raises at import: the module, its error and where it
    raised, exit 2, no traceback, nothing written (the module is imported once Ray is up)."""
    from .conftest import user_module

    user_module("broken_install.py", tmp_path, "badmod.py")
    spec_file = write_spec(
        "e:\n  run: badmod:train\n  metric: loss\n  mode: min\n  stop: {training_iteration: 2}\n"
    )
    out = tmp_path / "out"
    line = refused(cli("run", spec_file, "--storage-path", out, "-q"))
    assert line == (
        f"error: {spec_file}: e.run: importing module 'badmod' failed: RuntimeError: broken "
        f"install (at {tmp_path.name}/badmod.py:4)"  # outside the working directory: 2 parts
    ), line
    assert not out.exists()
