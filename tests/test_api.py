"""The Python API (`tune_app.run`, `tune_app.load`) and `tune_app best`: the same errors as
the CLI, a typed result, the run read back as a DataFrame, the best configuration as a spec that
reproduces it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

import tune_app
from tune_app.errors import SpecError

from .conftest import user_module

# my_trainables.train reports score = x * step for `steps` steps; `nested` is not read.
SPEC = {
    "metric": "score",
    "mode": "max",
    "experiments": {
        "e": {
            "run": "my_trainables:train",
            "config": {
                "x": {"grid_search": [1.0, 3.0, 2.0]},
                "steps": 2,
                "nested": {"gamma": {"grid_search": [1, 2]}},
            },
        }
    },
}


@pytest.fixture(scope="module")
def finished(ray_session, tmp_path_factory):
    """One small run through the API, shared by the tests that read it back. A spec given as a
    mapping finds `module:function` trainables in the current folder."""
    folder = tmp_path_factory.mktemp("api")
    user_module("my_trainables.py", folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        return tune_app.run(SPEC, storage_path=folder / "out"), folder / "out"


def test_run_returns_a_typed_result(finished):
    result, out = finished
    assert result.exit_code == 0 and result.passed
    summary = result.experiments["e"]
    assert summary.counts == {"TERMINATED": 6}
    best = result.best["e"]
    assert best is not None and best.params["x"] == 3.0 and best.score == 6.0
    assert best.score == max(t.score for t in summary.trials)
    path = result.summary_paths["e"]
    assert path == f"{out / 'e'}/summary.json"
    assert json.loads(open(path).read())["best"]["trial_id"] == best.trial_id


def test_results_show_short_in_a_notebook():
    """A run's reprs say what it ended with, not every trial's every reported key."""
    from pathlib import Path
    from types import SimpleNamespace

    from tune_app.api import RunResult
    from tune_app.rundir.read import ExperimentResults
    from tune_app.rundir.records import RunSummary, TrialOutcome

    trials = [TrialOutcome(f"t_{i:05}", "TERMINATED", {"x": i}, float(i), 9) for i in range(50)]
    summary = RunSummary("e", "score", "max", 1.0, trials, reported=[f"k{i}" for i in range(999)])
    plan = SimpleNamespace(experiments=[SimpleNamespace(name="e", location="/r/e")])
    shown = "RunSummary('e': 50 terminated; best score = 49 (trial t_00049))"
    assert repr(RunResult(plan, [summary], [])) == (
        f"RunResult(exit_code=0, [{shown}], folders={{'e': '/r/e'}})"
    )
    read = ExperimentResults(summary, Path("/r/e"), [], "", {}, {}, location="/r/e")
    assert repr(read) == f"ExperimentResults({shown}, location='/r/e')"


def test_load_gives_the_trials_as_analyze_ranks_them(finished, cli):
    result, out = finished
    frame = tune_app.load(out)
    shown = json.loads(cli("analyze", out, "--format", "json").out)[0]
    assert list(frame["trial_id"]) == [t["trial_id"] for t in shown["trials"]]
    assert list(frame["score"]) == [t["score"] for t in shown["trials"]]
    assert {"config/x", "config/nested.gamma", "status", "iterations"} <= set(frame.columns)
    assert set(frame["run"]) == {str(out / "e")} and set(frame["metric"]) == {"score"}
    assert frame.iloc[0]["config/x"] == 3.0 and len(frame) == 6
    assert result.frame()["trial_id"].tolist() == frame["trial_id"].tolist()


def test_a_dict_spec_resumes_without_a_spec_file(finished):
    from tune_app.resuming import resume_plan

    _, out = finished
    (ep,) = resume_plan(out / "e").experiments  # no "spec file changed" refusal
    assert ep.name == "e" and ep.trials == 6


def test_bad_input_raises_the_clis_error_and_writes_nothing(tmp_path, cli):
    bad = {"e": {"run": "my_fnuc", "config": {"alpha": 1}}}
    with pytest.raises(SpecError) as raised:
        tune_app.run(bad, storage_path=tmp_path / "out")
    assert "my_fnuc" in str(raised.value) and "my_func" in str(raised.value)  # the near miss
    assert not (tmp_path / "out").exists()
    spec_file = tmp_path / "bad.yaml"
    spec_file.write_text(yaml.safe_dump(bad))
    assert cli("run", spec_file).code == 2
    with pytest.raises(SpecError, match="bad.yaml"):
        tune_app.run(spec_file, storage_path=tmp_path / "out")


def _train(config):
    """A trainable handed over as a function object, Ray Tune's way."""


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        pytest.param(
            {"e": {"run": _train}},
            "e.run",
            ["a spec names its trainable", "'module:function'", "write 'tests.test_api:_train'"],
            id="a-function-its-own-name-suggested",
        ),
        pytest.param(
            {"e": {"run": lambda config: None}},
            "e.run",
            ["<lambda> is a Python object", "at the top level of a module file"],
            id="a-lambda",
        ),
        pytest.param(
            {"e": {"run": "my_func", "config": {"x": {"grid_search": [1, 2j]}}}},
            "e.config.x.grid_search[1]",
            ["complex 2j is not plain data"],
            id="not-plain-data",
        ),
    ],
)
def test_a_python_object_in_a_dict_spec_is_one_error_at_its_key(tmp_path, spec, path, words):
    with pytest.raises(SpecError) as raised:
        tune_app.run(spec, storage_path=tmp_path / "out")
    assert raised.value.path == path and all(w in str(raised.value) for w in words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("folders", "runs", "command"),
    [
        pytest.param(["out/e"], {}, "python -m tune_app resume out/e", id="one"),
        pytest.param(
            ["out/a", "out/b"],
            {"a": "s.yaml", "b": "s.yaml"},
            "python -m tune_app resume out",
            id="one-storage-folder",
        ),
        pytest.param(
            ["out/a", "out/b"],
            {"a": "s.yaml", "b": "s.yaml", "c": "other.yaml"},
            "python -m tune_app resume out/a && python -m tune_app resume out/b",
            id="beside-another-specs-run",  # `resume out` refuses two spec files
        ),
        pytest.param(
            ["x/a", "y/b"],
            {},
            "python -m tune_app resume x/a && python -m tune_app resume y/b",
            id="apart",
        ),
        pytest.param(
            ["s3://b/p/a", "s3://b/p/b"],
            {},
            "python -m tune_app resume s3://b/p/a && python -m tune_app resume s3://b/p/b",
            id="cloud",
        ),
    ],
)
def test_resume_command_continues_every_folder_with_one_command_where_it_can(
    tmp_path, monkeypatch, folders, runs, command
):
    from tune_app.api import resume_command

    monkeypatch.chdir(tmp_path)
    for name, spec_file in runs.items():
        (tmp_path / "out" / name).mkdir(parents=True)
        (tmp_path / "out" / name / "run.json").write_text(
            json.dumps({"experiment": name, "spec_file": spec_file})
        )
    assert resume_command(folders) == command


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(KeyboardInterrupt(), id="ctrl-c"),
        pytest.param(tune_app.TuneFailure("Tune's own loop failed (RuntimeError)"), id="failure"),
    ],
)
def test_a_run_on_a_cluster_is_resumed_on_it(tmp_path, monkeypatch, stop):
    """The resume command of a run that joined a cluster through `address` joins it too: pasted
    without it, `resume` starts a local Ray instead."""
    from tune_app import runner
    from tune_app.api import _run_plan
    from tune_app.cli.printing import interrupted_line
    from tune_app.resources import ClusterAddress

    spec = {"experiments": {"e": {"run": "my_func", "config": {"alpha": 1, "beta": 1}}}}
    plan = tune_app.validate(spec, storage_path=tmp_path)
    (tmp_path / "e").mkdir()  # the run began

    def stopped(plan, opts):
        raise stop

    monkeypatch.setattr(runner, "run", stopped)
    command = f"Continue with: python -m tune_app resume {tmp_path}/e"
    for given_as, said in (("--address", " --address 10.0.0.1:6379"), ("RAY_ADDRESS", "")):
        # RAY_ADDRESS: the shell that resumes has it still
        address = ClusterAddress("10.0.0.1:6379", given_as)
        with pytest.raises((KeyboardInterrupt, tune_app.TuneFailure)) as raised:
            _run_plan(plan, runner.RunOptions(address=address), None)
        failed = isinstance(raised.value, tune_app.TuneFailure)
        line = str(raised.value) if failed else interrupted_line(raised.value)
        assert line.endswith(command + said), line


def test_importing_the_package_imports_neither_ray_nor_pandas():
    code = (
        "import sys, tune_app\n"
        "from tune_app import NeverReported, SpecError, StorageError, TuneAppError, TuneFailure\n"
        "print(sorted(m for m in ('ray', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_best_prints_a_spec_that_reproduces_the_best_trial(finished, cli, tmp_path):
    result, out = finished
    best = result.best["e"]
    printed = cli("best", out / "e")
    assert printed.code == 0, printed.err
    data = yaml.safe_load(printed.out)
    exp = data["experiments"]["e-best"]
    gamma = best.params["nested.gamma"]
    assert exp["config"] == {"x": 3.0, "steps": 2, "nested": {"gamma": gamma}}
    spec_file = tmp_path / "best.yaml"
    spec_file.write_text(printed.out)
    user_module("my_trainables.py", tmp_path)
    checked = tune_app.validate(spec_file, storage_path=tmp_path / "again")
    assert [ep.trials for ep in checked.experiments] == [1]
    again = tune_app.run(spec_file, storage_path=tmp_path / "again")
    (trial,) = again.experiments["e-best"].trials
    assert trial.params == {} and trial.config["x"] == 3.0
    assert trial.score == pytest.approx(best.score)  # a deterministic trainable: the same value


def test_best_formats_and_evaluation_seeds(finished, cli):
    result, out = finished
    best = result.best["e"]
    lines = cli("best", out, "--format", "overrides").out.splitlines()
    assert lines == [
        "e.config.x=3.0",
        f"e.config.nested.gamma={json.dumps(best.params['nested.gamma'])}",
    ]
    data = json.loads(cli("best", out, "--format", "json", "--seeds", "3").out)
    seeds = data["experiments"]["e-best"]["seeds"]  # the seeds axis, on evaluation seeds
    assert seeds == [10000, 10001, 10002] and "seed" not in data["experiments"]["e-best"]["config"]
    assert "search" not in data and "num_samples" not in data["experiments"]["e-best"]


def test_best_of_a_run_without_a_score_says_why(tmp_path, cli):
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"experiment": "e", "metric": "m", "mode": "max"}))
    (folder / "spec.yaml").write_text("e: {run: my_func}\n")
    (folder / "tuner.pkl").write_bytes(b"")
    printed = cli("best", folder)
    assert printed.code == 2 and "no trial of experiment 'e' has a score" in printed.err


def test_best_seeds_need_a_trainable_that_takes_a_seed(tmp_path, cli):
    from .conftest import SEARCH_SPACES

    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "spec.yaml").write_text((SEARCH_SPACES / "grid.yaml").read_text())
    (folder / "tuner.pkl").write_bytes(b"")
    run = {"experiment": "my_experiment", "metric": "mean_accuracy", "mode": "max"}
    (folder / "run.json").write_text(json.dumps({**run, "searched": ["alpha", "beta"]}))
    row = {"trial_id": "t1", "training_iteration": 1, "mean_accuracy": 3.0}
    (folder / "results.jsonl").write_text(json.dumps({**row, "config": {"alpha": 1, "beta": 2}}))
    assert "alpha: 1" in cli("best", folder).out
    printed = cli("best", folder, "--seeds", "2")
    assert printed.code == 2
    assert "trainable 'my_func' takes no 'seed' config key" in printed.err
    assert "experiment 'my_experiment' cannot be run on evaluation seeds" in printed.err


def test_best_keeps_a_seed_searched_as_a_plain_config_key(tmp_path, cli):
    """Without a seeds axis, a `seed` grid is a choice like any other: the best trial's seed
    is kept, not left as the grid (which re-ran every seed and lost the winning one)."""
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "spec.yaml").write_text(
        "e:\n  run: es_cartpole\n"
        "  config: {lr: {grid_search: [0.1, 0.2]}, seed: {grid_search: [0, 1]}}\n"
    )
    (folder / "tuner.pkl").write_bytes(b"")
    run = {"experiment": "e", "metric": "score", "mode": "max", "searched": ["lr", "seed"]}
    (folder / "run.json").write_text(json.dumps(run))
    rows = [
        {"trial_id": f"t{i}", "training_iteration": 1, "score": s, "config": {"lr": lr, "seed": sd}}
        for i, (lr, sd, s) in enumerate(
            [(0.1, 0, 1.0), (0.1, 1, 9.0), (0.2, 0, 2.0), (0.2, 1, 3.0)]
        )
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = json.loads(cli("best", folder, "--format", "json").out)
    assert data["e-best"]["config"] == {"lr": 0.1, "seed": 1}  # the classic form, as written
    evaluated = json.loads(cli("best", folder, "--format", "json", "--seeds", "2").out)
    exp = evaluated["e-best"]
    assert exp["config"] == {"lr": 0.1} and exp["seeds"] == [10000, 10001]


def test_no_submodule_is_named_as_an_api_function():
    # The package's names come from `api` on first use (its `__getattr__`); a submodule of the
    # same name, once imported, is bound on the package and shadows the function: after one
    # `tune_app.resume(...)` imported `tune_app.resume`, the next call raised "'module' object
    # is not callable".
    import importlib.util

    import tune_app

    for name in tune_app.__all__:
        assert importlib.util.find_spec(f"tune_app.{name}") is None, name
        assert callable(getattr(tune_app, name)) or isinstance(getattr(tune_app, name), type)
    assert set(tune_app.__all__) <= set(dir(tune_app))  # found before first use too
    assert not {"Any", "annotations"} & set(dir(tune_app))  # what its code imports is not API
    assert issubclass(tune_app.NeverReported, tune_app.SpecError)


class _Stop(Exception):
    """Raised from `on_plan` to end a run after its plan, before Ray starts."""


def test_a_second_run_in_another_thread_is_refused_at_once_while_one_goes(tmp_path):
    """Two `tune_app.run` calls in two threads raced in ray.init (Ray's dashboard traceback,
    "called ray.init twice"): a process runs one at a time, and the second is told why."""
    import threading

    from tune_app.api import RunInProgress

    config = {"alpha": 1, "beta": 1}
    spec = {"e": {"run": "my_func", "stop": {"training_iteration": 1}, "config": config}}
    refused: list[BaseException] = []

    def second() -> None:
        for call in (
            lambda: tune_app.run(spec, storage_path=tmp_path / "b"),
            lambda: tune_app.resume(tmp_path / "a"),
        ):
            try:
                call()
            except BaseException as err:
                refused.append(err)

    def first_plan(plan) -> None:  # the first run holds the process's run: a second comes
        other = threading.Thread(target=second, name="second")
        other.start()
        other.join(timeout=30)
        raise _Stop

    with pytest.raises(_Stop):
        tune_app.run(spec, storage_path=tmp_path / "a", on_plan=first_plan)
    assert [type(e) for e in refused] == [RunInProgress, RunInProgress], refused
    run_refused, resume_refused = (str(e) for e in refused)
    assert run_refused.startswith(
        "cannot start a run of a spec mapping: a run of a spec mapping (thread 'MainThread') "
        "is still going in this process"
    ), run_refused
    assert resume_refused.startswith(f"cannot start the resume of {tmp_path / 'a'}: ")
    for text in (run_refused, resume_refused):
        assert "\n" not in text and "in one spec" in text and "a process of its own" in text
    assert refused[0].exit_code == 2 and not (tmp_path / "b").exists()

    # Released at the end, however the run ended: the next one starts.
    def stop(plan) -> None:
        raise _Stop

    with pytest.raises(_Stop):
        tune_app.run(spec, storage_path=tmp_path / "c", on_plan=stop)


TWO_THREADS = """
import sys, threading
import tune_app

def go(name):
    spec = {name: {"run": "my_trainables:train", "metric": "score", "mode": "max",
                   "config": {"x": 1.0, "steps": 2}}}
    try:
        result = tune_app.run(spec, storage_path=sys.argv[1])
        print(f"{name}: exit {result.exit_code}", flush=True)
    except tune_app.api.RunInProgress as err:
        print(f"{name}: refused: {err}", flush=True)

threads = [threading.Thread(target=go, args=(n,), name=n) for n in ("a", "b")]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.mark.e2e
def test_two_runs_in_two_threads_end_one_done_and_one_refused_without_a_traceback(tmp_path):
    user_module("my_trainables.py", tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", TWO_THREADS, str(tmp_path / "out")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    outcomes = sorted(line for line in proc.stdout.splitlines() if line[:3] in ("a: ", "b: "))
    assert len(outcomes) == 2, output
    assert sum(line.endswith(": exit 0") for line in outcomes) == 1, output
    assert sum(": refused: cannot start " in line for line in outcomes) == 1, output
    for noise in ("Traceback", "aiohttp_cors", "ray.init twice"):
        assert noise not in output, output
