"""The runner on the session's Ray: searchers, schedulers, user modules, never-reported keys."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tune_app import runner, spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.tuner import REPORT_GRACE, _scheduler

from .conftest import results_of, user_module

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def user_spec(write_spec, tmp_path):
    user_module("my_trainables.py", tmp_path, "my_trainables.py")
    return write_spec


def summary_of(folder):
    return json.loads((folder / "summary.json").read_text())


def configs_of(folder):
    return sorted(json.dumps(t["config"], sort_keys=True) for t in summary_of(folder)["trials"])


RANDOM = """
search: random
seed: {seed}
metric: score
mode: max
experiments:
  r:
    run: my_trainables:train
    num_samples: 4
    config:
      x: {{uniform: [0, 10]}}
      steps: {{choice: [1, 2]}}
"""


@pytest.mark.slow  # an in-process run: the second tier
def test_random_search_with_a_seed_draws_the_same_configs(ray_session, cli, user_spec, tmp_path):
    spec_file = user_spec(RANDOM.format(seed=7))
    runs = []
    for name in ("a", "b", "c"):
        seed_file = spec_file if name != "c" else user_spec(RANDOM.format(seed=8), "other.yaml")
        assert cli("run", seed_file, "--storage-path", tmp_path / name, "-q").code == 0
        runs.append(configs_of(tmp_path / name / "r"))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert len(runs[0]) == 4
    for config in map(json.loads, runs[0]):
        assert 0 <= config["x"] < 10 and config["steps"] in (1, 2)


def test_hyperopt_search_with_asha_runs_inside_the_space(ray_session, cli, user_spec, tmp_path):
    spec_file = user_spec("""
metric: score
mode: max
search: {type: hyperopt, n_initial_points: 2}
scheduler: {type: asha, max_t: 3, grace_period: 1}
seed: 1
experiments:
  h:
    run: my_trainables:train
    num_samples: 5
    stop: {training_iteration: 3}
    config:
      x: {loguniform: [0.1, 10]}
""")
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    summary = summary_of(tmp_path / "o" / "h")
    assert summary["counts"] == {"TERMINATED": 5}
    xs = [t["config"]["x"] for t in summary["trials"]]
    assert all(0.1 <= x <= 10 for x in xs) and len(set(xs)) == 5
    best = summary["best"]
    assert best["metric"] == max(t["metric"] for t in summary["trials"])


def test_legacy_reporter_loop_from_a_module_beside_the_spec(ray_session, cli, user_spec, tmp_path):
    spec_file = user_spec("""
legacy_exp:
  run: my_trainables:legacy
  stop: {score: 10, training_iteration: 100}
  config: {x: {grid_search: [1, 5]}}
""")
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    trials = {t["config"]["x"]: t for t in summary_of(tmp_path / "o" / "legacy_exp")["trials"]}
    assert trials[1]["iterations"] == 10 and trials[5]["iterations"] == 2


@pytest.mark.parametrize("trainable", ["keywords", "generator"])
def test_a_trainable_reporting_keywords_as_ray_1_documented_runs(
    ray_session, cli, user_spec, tmp_path, trainable
):
    """`tune.report(score=...)`, the function API of Ray 1.x to 2.6: Ray 2.7 and later take a
    dict only, and every trial failed with a TypeError. `yield {...}`, Tune's generator API,
    which Tune iterates: the app's wrappers handed Tune the generator unread, and every trial
    failed with 'Invalid return or yield value'."""
    spec_file = user_spec(f"""
old_style:
  run: my_trainables:{trainable}
  metric: score
  mode: max
  config: {{x: {{grid_search: [1, 2]}}}}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = summary_of(tmp_path / "o" / "old_style")
    assert summary["counts"] == {"TERMINATED": 2}
    assert {t["config"]["x"]: t["iterations"] for t in summary["trials"]} == {1: 3, 2: 3}
    assert summary["best"]["params"]["x"] == 2 and summary["best"]["metric"] == 6


@pytest.mark.e2e
def test_a_trainable_on_ray_train_s_functions_as_ray_2_7_to_2_40_documented_runs(
    user_spec, tmp_path
):
    """`ray.train.report(..., checkpoint=...)` and `ray.train.get_checkpoint()`: Ray 2.60's
    raise DeprecationWarning in a Tune trial, and every trial failed. A run of its own (its own
    local Ray), as a user runs it: the app's settings of the trial processes apply."""
    spec_file = user_spec("""
train_api:
  run: my_trainables:train_api
  metric: score
  mode: max
  max_failures: 1
  config: {x: {grid_search: [1, 2]}}
""")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tune_app",
            "run",
            spec_file,
            "-q",
            "--storage-path",
            tmp_path / "o",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = summary_of(tmp_path / "o" / "train_api")
    assert summary["counts"] == {"TERMINATED": 2}
    assert {t["config"]["x"]: t["failures"] for t in summary["trials"]} == {1: 1, 2: 1}
    rows = results_of(tmp_path / "o" / "train_api")
    # After its failure each trial went on from step 3, restored from its step-2 checkpoint.
    x_of = {t["trial_id"]: t["config"]["x"] for t in summary["trials"]}
    assert sorted(r["score"] / x_of[r["trial_id"]] for r in rows if r["restored"]) == [3, 3, 4, 4]


def test_a_stop_key_never_reported_ends_the_search_with_a_clear_error(
    ray_session, cli, user_spec, tmp_path
):
    spec_file = user_spec("""
e:
  run: my_trainables:legacy
  num_samples: 3
  stop: {scor: 10}
  config: {x: 1}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 2
    assert f"{spec_file}: e.stop.scor: 'scor' is never reported" in result.err
    assert "did you mean 'score'" in result.err
    # the loop would never end on its own: the guard ended the search once a trial had
    # reported REPORT_GRACE results without the key (a key may come every few results)
    lines = (tmp_path / "o" / "e" / "results.jsonl").read_text().splitlines()
    assert REPORT_GRACE <= len(lines) <= 3 * REPORT_GRACE


def test_a_scheduler_time_attr_never_reported_ends_the_search_too(
    ray_session, cli, user_spec, tmp_path
):
    """Misspelt, PBT never perturbs and ASHA never stops a trial, and the run looked fine."""
    spec_file = user_spec("""
metric: score
mode: max
scheduler: {type: asha, time_attr: training_iter, max_t: 4}
experiments:
  e:
    run: my_trainables:legacy
    num_samples: 2
    config: {x: 1}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 2
    assert "e.scheduler.time_attr: 'training_iter' is never reported" in result.err
    assert "did you mean 'training_iteration'" in result.err


@pytest.mark.parametrize(
    "written, cls, attrs",
    [
        (
            "{type: hyperband, max_t: 9, reduction_factor: 3}",
            "HyperBandScheduler",
            {"_max_t_attr": 9, "_eta": 3},
        ),
        (
            "{type: asha, max_t: 20, grace_period: 2, reduction_factor: 2}",
            "AsyncHyperBandScheduler",
            {"_max_t": 20, "_reduction_factor": 2},
        ),
        (
            "{type: median, grace_period: 5, min_samples_required: 2}",
            "MedianStoppingRule",
            {"_grace_period": 5, "_min_samples_required": 2},
        ),
        ("fifo", "FIFOScheduler", {}),
    ],
)
def test_scheduler_options_reach_tune(written, cls, attrs, tmp_path):
    text = f"metric: mean_accuracy\nmode: max\nscheduler: {written}\n"
    text += "experiments:\n  e: {run: my_func, config: {alpha: 1, beta: 1}}\n"
    path = tmp_path / "s.yaml"
    path.write_text(text)
    (ep,) = make_plan(spec.load(path)).experiments
    built = _scheduler(ep)
    tunes = getattr(built, "tune", built)  # Tune's own scheduler, inside the app's wrappers
    assert cls in [c.__name__ for c in type(tunes).__mro__]
    for attr, value in attrs.items():
        assert math.isclose(getattr(tunes, attr), value)


def test_hyperband_pauses_and_resumes_trials_from_their_checkpoints(
    ray_session, cli, write_spec, tmp_path
):
    spec_file = write_spec("""
metric: episode_return_mean
mode: max
search: random
seed: 3
scheduler: {type: hyperband, max_t: 9, reduction_factor: 3}
experiments:
  hb:
    run: es_cartpole
    simulations: 1
    num_samples: 9
    stop: {training_iteration: 9}
    config: {population: 8, lr: {uniform: [0.05, 0.3]}}
""")
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    rows = results_of(tmp_path / "o" / "hb")
    by_trial: dict[str, list[dict]] = {}
    for row in rows:
        by_trial.setdefault(row["trial_id"], []).append(row)
    assert len(by_trial) == 9
    resumed = 0
    for trial_rows in by_trial.values():
        iterations = [r["training_iteration"] for r in trial_rows]
        assert iterations == list(range(1, len(iterations) + 1))  # none lost, none repeated
        # A resumed trial starts counting again since its restore, but carries on its iterations.
        resumed += sum(
            1
            for r in trial_rows
            if r["iterations_since_restore"] == 1 and r["training_iteration"] > 1
        )
    assert resumed >= 1


LOCAL_RUN = """
import json, sys
import tune_app
spec = {"e": {"run": "worker_env:report_env", "config": {"x": {"grid_search": [1, 2, 3]}}}}
result = tune_app.run(spec, storage_path=sys.argv[1], verbosity=0)
rows = [json.loads(line) for line in open(sys.argv[1] + "/e/results.jsonl")]
print(json.dumps({"torch": "torch" in sys.modules, "tensorboardX": "tensorboardX" in sys.modules,
                  "rows": rows, "passed": result.passed}))
"""


@pytest.mark.e2e
def test_a_local_run_starts_trials_in_ray_s_own_workers_and_never_imports_torch(tmp_path):
    """Its own process, as a user's: the app starts the local Ray. Tune would give each trial
    actor a runtime env (so a fresh worker process each); here the actors have none, and the
    workers inherit Tune's variable instead. A function trainable's driver imports no torch
    (tensorboardX's writer would: 2.5 s)."""
    user_module("worker_env.py", tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", LOCAL_RUN, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["passed"] and len(got["rows"]) == 3
    assert {r["own_env_vars"] for r in got["rows"]} == {0.0}
    assert {r["pl_disable_fork"] for r in got["rows"]} == {1.0}
    assert not got["torch"] and not got["tensorboardX"]
    assert list((tmp_path / "out" / "e").rglob("events.out.tfevents.*"))  # TensorBoard still


def test_only_trainables_that_reset_cleanly_reuse_their_process(tmp_path):
    from ray import tune

    from tune_app.tuner import resets_cleanly

    user_module("class_trainables.py", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        from class_trainables import Counter, ResettingCounter
    finally:
        sys.path.remove(str(tmp_path))
    assert resets_cleanly(lambda config: None)
    assert resets_cleanly(tune.with_resources(ResettingCounter, {"cpu": 1}))
    assert not resets_cleanly(Counter)
    assert not resets_cleanly(tune.with_resources(Counter, {"cpu": 1}))


@pytest.mark.slow  # an in-process run: the second tier
def test_a_class_trainable_without_reset_config_runs_every_trial(
    ray_session, cli, write_spec, tmp_path
):
    """Tune's docs' class API: a Trainable that does not override reset_config. Reusing its
    process for the next trial failed that trial ("reuse requires reset_config()")."""
    user_module("class_trainables.py", tmp_path)
    spec_file = write_spec("""
e:
  run: class_trainables:Counter
  metric: score
  mode: max
  stop: {training_iteration: 2}
  config: {a: {grid_search: [1, 2, 3, 4]}}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = summary_of(tmp_path / "o" / "e")
    assert summary["counts"] == {"TERMINATED": 4}
    assert summary["best"]["params"]["a"] == 4


@pytest.mark.slow  # an in-process run: the second tier
def test_a_class_trainable_that_saves_no_checkpoints_runs_and_one_that_does_checkpoints(
    ray_session, cli, write_spec, tmp_path
):
    """Tune checkpoints a class trainable at every trial's end unless told not to, and its base
    save_checkpoint raises: a class with only setup and step failed every trial. The spec's
    checkpoint_frequency was refused for every user module, classes that save included."""
    user_module("class_trainables.py", tmp_path)
    plain = write_spec("""
e:
  run: class_trainables:Plain
  metric: score
  mode: max
  stop: {training_iteration: 2}
  config: {a: {grid_search: [1, 2]}}
""")
    result = cli("run", plain, "--storage-path", tmp_path / "p", "-q")
    assert result.code == 0, result.err
    assert summary_of(tmp_path / "p" / "e")["counts"] == {"TERMINATED": 2}

    saving = write_spec(
        """
e:
  run: class_trainables:Counter
  metric: score
  mode: max
  checkpoint_config: {checkpoint_frequency: 2, num_to_keep: 5}
  stop: {training_iteration: 4}
  config: {a: 1}
""",
        name="saving.yaml",
    )
    result = cli("run", saving, "--storage-path", tmp_path / "c", "-q")
    assert result.code == 0, result.err
    (trial,) = [p for p in (tmp_path / "c" / "e").iterdir() if p.name.startswith("Counter_")]
    assert sorted(p.name for p in trial.glob("checkpoint_*")) == [
        "checkpoint_000000",
        "checkpoint_000001",
    ]


def test_checkpointing_a_class_that_saves_none_is_refused_before_anything_is_written(
    cli, write_spec, tmp_path
):
    """Checked once imported, where its module's source does not show what the class is."""
    user_module("class_trainables.py", tmp_path)
    (tmp_path / "reexported.py").write_text("from class_trainables import Plain\n")
    spec_file = write_spec("""
e:
  run: reexported:Plain
  metric: score
  mode: max
  checkpoint_config: {checkpoint_at_end: true}
  scheduler: {type: hyperband, max_t: 4}
  config: {a: {grid_search: [1, 2]}}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 2
    lines = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(lines) == 2, result.err
    assert f"{spec_file.name}: e.checkpoint_config.checkpoint_at_end" in lines[0]
    assert "does not implement save_checkpoint" in lines[0]
    assert "e.scheduler: scheduler hyperband pauses trials" in lines[1]
    assert "Traceback" not in result.err
    assert not (tmp_path / "o").exists()


def test_the_runner_leaves_tune_s_import_to_the_time_ray_starts():
    """Importing Tune (0.7 s) runs in a thread while a local Ray starts: the runner module
    itself must not import it."""
    code = "import sys, tune_app.runner; print('ray.tune' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_background_import_that_fails_is_done_again_and_its_error_raised(tmp_path, monkeypatch):
    from tune_app.runner import _Import

    (tmp_path / "broken_mod.py").write_text("raise RuntimeError('the module is broken')\n")
    (tmp_path / "fine_mod.py").write_text("VALUE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fine = _Import("fine_mod")
    fine.wait()
    assert sys.modules["fine_mod"].VALUE == 3
    broken = _Import("broken_mod")
    with pytest.raises(RuntimeError, match="the module is broken"):
        broken.wait()
    assert broken.failed


ONE_TRIAL = """
e:
  run: my_trainables:legacy
  num_samples: 1
  stop: {training_iteration: 1}
  config: {x: 1}
"""


def test_a_run_tune_refuses_at_start_leaves_no_folder_to_resume(
    ray_session, cli, user_spec, tmp_path, monkeypatch
):
    """A run that failed before any trial left run.json and tuner.pkl behind, and the next
    `run` refused to start, calling it a resumable run."""
    from tune_app import tuner

    spec_file = user_spec(ONE_TRIAL)

    def refused(*args, **kwargs):
        raise ValueError("Tune refuses this search")

    with monkeypatch.context() as patched:
        patched.setattr(tuner, "build_tuner", refused)
        failed = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert failed.code == 1 and "Tune refuses this search" in failed.err
    assert not (tmp_path / "o" / "e").exists()
    again = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert again.code == 0, again.err


def test_quiet_runs_leave_out_the_searchers_library_warnings():
    """BOHB's KDEs (statsmodels), PB2's Gaussian process (scikit-learn), pandas and Optuna warn
    in the driver about things a user can do nothing about; -q shows none of them."""
    import warnings

    from tune_app.runner import _library_warnings

    def warn_from(module: str) -> list[str]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with _library_warnings(0):
                warnings.warn_explicit("divide by zero", RuntimeWarning, "kernels.py", 62, module)
            with _library_warnings(1):
                warnings.warn_explicit("divide by zero", RuntimeWarning, "kernels.py", 62, module)
        return [str(w.message) for w in seen]

    assert warn_from("statsmodels.nonparametric.kernels") == ["divide by zero"]  # not with -q
    assert warn_from("my_trainables") == ["divide by zero"] * 2  # the user's own: always


def test_a_driver_killed_before_tune_started_does_not_block_the_next_run(
    ray_session, cli, user_spec, tmp_path
):
    """Killed just after it made the folder, a run left run.json and spec.yaml only: `resume`
    has no Tune state to continue, and `run` refused the folder."""
    spec_file = user_spec(ONE_TRIAL)
    folder = tmp_path / "o" / "e"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    (folder / "spec.yaml").write_text(spec_file.read_text())
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    assert (folder / "summary.json").exists()


def test_a_ray_other_than_the_tested_one_gets_one_warning_line():
    from tune_app.ray_internals import TESTED_RAY_VERSION
    from tune_app.ray_internals.versions import installed, unchecked

    assert installed() == TESTED_RAY_VERSION  # constraints.txt pins the newest checked one
    assert unchecked() is None
    line = unchecked("2.61.0")
    assert line is not None and "\n" not in line
    assert "Ray 2.61.0 is installed" in line and "2.55 to 2.60" in line


def test_no_module_outside_ray_internals_names_a_private_ray_symbol():
    """Ray's private symbols live in tune_app.ray_internals, whose docstring lists them."""
    import re

    from tests.conftest import ROOT

    private = re.compile(
        r"ray\._private|ray\._raylet|from ray[\w.]* import _|ray\.[\w.]*\._[a-z]|class_cache"
    )
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "tune_app").rglob("*.py")
        if "ray_internals" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, found


@pytest.mark.slow  # an in-process run: the second tier
def test_two_experiments_running_one_function_each_get_their_own_resources(
    ray_session, cli, write_spec, tmp_path, monkeypatch
):
    """Each experiment of several runs in a Ray actor of its own; what run.json says of how
    the run was started (command, working folder, spec file) is this process's, not the
    actor's: taken there, `resume` looked for the spec where Ray's worker ran, and refused."""
    user_module("trial_resources.py", tmp_path)
    spec_file = write_spec("""
metric: score
mode: max
experiments:
  one:
    run: trial_resources:train
    resources_per_trial: {cpu: 1}
  two:
    run: trial_resources:train
    resources_per_trial: {cpu: 2}
""")
    monkeypatch.chdir(tmp_path)
    result = cli("run", spec_file.name, "--storage-path", "o", "-q")
    assert result.code == 0, result.err
    for name, cpus in (("one", 1), ("two", 2)):
        assert [r["cpus"] for r in results_of(tmp_path / "o" / name)] == [cpus], name
        record = json.loads((tmp_path / "o" / name / "run.json").read_text())
        assert record["cwd"] == str(tmp_path) and record["spec_file"] == str(spec_file)
        assert record["command"][1:] == ["run", spec_file.name, "--storage-path", "o", "-q"]


@pytest.mark.parametrize(
    "trainable",
    [pytest.param("function", id="function"), pytest.param("class", id="class")],
)
def test_a_trainable_is_named_per_experiment_for_tunes_registry(trainable):
    from ray import tune

    from tune_app.runner.experiment import _per_experiment

    def train(config):
        return {"score": config["x"]}

    class Train(tune.Trainable):
        pass

    given = train if trainable == "function" else Train
    one, two = _per_experiment(given, "one"), _per_experiment(given, "two")
    names = {one.__name__, two.__name__}
    assert len(names) == 2 and all(n.startswith(given.__name__ + "_") for n in names)
    assert _per_experiment(given, "one").__name__ == one.__name__  # stable: resume finds it
    assert _per_experiment(given, None).__name__ == given.__name__  # as runs begun before
    if trainable == "function":
        assert one({"x": 3}) == {"score": 3}
        assert not hasattr(given, "_resources")  # with_resources marks the wrapper, not it
        tune.with_resources(one, {"cpu": 1})
        assert not hasattr(given, "_resources")
    else:
        assert issubclass(one, Train)


@pytest.mark.parametrize(
    ("files", "error", "removed"),
    [
        pytest.param({}, KeyboardInterrupt(), True, id="before-tune-saved-anything"),
        pytest.param({"experiment_state-x.json": "{}"}, KeyboardInterrupt(), False, id="ctrl-c"),
        pytest.param(
            {"experiment_state-x.json": "{}"}, SpecError("bad"), True, id="refused-no-result"
        ),
        pytest.param(
            {"experiment_state-x.json": "{}", "results.jsonl": '{"trial_id": "a"}\n'},
            SpecError("bad"),
            False,
            id="refused-with-results",
        ),
    ],
)
def test_a_run_refused_before_any_trial_reported_leaves_no_folder(tmp_path, files, error, removed):
    from types import SimpleNamespace

    from tune_app.rundir.location import RunLocation
    from tune_app.runner.experiment import _nothing_ran

    folder = RunLocation(tmp_path / "e")
    folder.create()
    for name, text in {"run.json": "{}", "spec.yaml": "e: {}\n", **files}.items():
        (folder.local / name).write_text(text)
    assert _nothing_ran(SimpleNamespace(folder=folder), error) is removed


@pytest.mark.parametrize(("verbosity", "shown"), [(0, False), (1, True)])
@pytest.mark.parametrize("form", ["function", "argument"])
def test_quiet_runs_hide_optunas_experimental_warnings(verbosity, shown, form):
    """-q hides Optuna's ExperimentalWarning in both its forms (known by its words, without
    importing Optuna for its class); otherwise it is shown as Python shows it."""
    optuna = pytest.importorskip("optuna")
    from optuna.exceptions import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always")  # every warning shown, unless the run hides it
        with runner._library_warnings(verbosity), warnings.catch_warnings(record=True) as seen:
            # Said where it is called (here, as in Ray's searcher): no module filter hides it.
            if form == "function":
                optuna.storages.fail_stale_trials(optuna.create_study())
            else:  # optuna._experimental.warn_experimental_argument's words
                warnings.warn(
                    "Argument ``constraints_func`` is an experimental feature. The interface can "
                    "change in the future.",
                    ExperimentalWarning,
                    stacklevel=1,
                )
    experimental = [w for w in seen if issubclass(w.category, ExperimentalWarning)]
    assert len(experimental) == (1 if shown else 0), [str(w.message) for w in experimental]
