"""Bad input: one message with file, key path, what is wrong and what is allowed; exit 2;
no traceback, nothing written, Ray never imported."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tune_app.errors import error_line, first_line

from .conftest import refused, user_module

GOOD = "e:\n  run: my_func\n  stop: {training_iteration: 2}\n  config: {alpha: 0.5, beta: 1}\n"

# (spec text, key path in the message, words that must appear: allowed values, hints)
BAD_SPECS = [
    pytest.param("", None, ["the file is empty"], id="empty"),
    pytest.param("- a\n- b\n", None, ["top level must be a mapping"], id="list"),
    pytest.param("e: [unclosed\n", None, ["not valid YAML", "line 2"], id="yaml-syntax"),
    pytest.param(
        "e:\n  run: my_fnc\n",
        "e.run",
        ["not a registered trainable", "did you mean 'my_func'", "my_func"],
        id="unknown-trainable",
    ),
    pytest.param(
        "e:\n  run: __import__('os').system('x')\n",
        "e.run",
        ["not a trainable name or a module:function"],
        id="run-code",
    ),
    pytest.param(
        "e:\n  run: no_such_module_xyz:f\n",
        "e.run",
        ["module 'no_such_module_xyz' cannot be found"],
        id="module-missing",
    ),
    pytest.param(
        "e:\n  run: my_func\n  num_sample: 2\n",
        "e.num_sample",
        ["unknown key 'num_sample'", "did you mean 'num_samples'", "resources_per_trial"],
        id="misspelt-key",
    ),
    pytest.param(
        "e:\n  run: my_func\n  num_samples: 0\n",
        "e.num_samples",
        ["greater than or equal to 1", "got 0"],
        id="num-samples-zero",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpus: 1}\n",
        "e.resources_per_trial.cpus",
        ["did you mean 'cpu'", "cpu, gpu"],
        id="resources-key",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 64}\n  config: {alpha: 1, beta: 1}\n",
        "e.resources_per_trial.cpu",
        ["needs 64 CPUs", "the machine has"],
        id="trial-too-big",
    ),
    pytest.param(
        "e:\n  run: my_func\n  config: {alpha: {uniform: [1, 0]}}\n",
        "e.config.alpha.uniform",
        ["lower < upper", "lower=1, upper=0"],
        id="bad-bounds",
    ),
    pytest.param(
        "e:\n  run: my_func\n  config: {alpha: {loguniorm: [1, 2]}}\n",
        "e.config.alpha",
        ["did you mean 'loguniform'", "grid_search, choice"],
        id="domain-near-miss",
    ),
    pytest.param(
        "e:\n  run: my_func\n  stop: {mean_acuracy: 5}\n  config: {alpha: 1, beta: 1}\n",
        "e.stop.mean_acuracy",
        ["never reported by trainable 'my_func'", "did you mean 'mean_accuracy'"],
        id="stop-never-reported",
    ),
    pytest.param(
        "e:\n  run: my_func\n  metric: acc\n  mode: max\n  config: {alpha: 1, beta: 1}\n",
        "e.metric",
        ["'acc' is never reported", "mean_accuracy"],
        id="metric-never-reported",
    ),
    pytest.param(
        "e:\n  run: my_func\n  checkpoint_config: {checkpoint_score_attribute: mean_acc}\n"
        "  config: {alpha: 1, beta: 1}\n",
        "e.checkpoint_config.checkpoint_score_attribute",
        ["'mean_acc' is never reported", "did you mean 'mean_accuracy'"],
        id="checkpoint-score-never-reported",
    ),
    pytest.param(
        "e:\n  run: my_func\n  mode: maximum\n",
        "e.mode",
        ["'maximum' is not allowed", "min, max", "did you mean 'max'"],
        id="mode",
    ),
    pytest.param(
        "scheduler: hyperbnd\nexperiments:\n  e: {run: my_func}\n",
        "scheduler",
        ["'hyperbnd' is not allowed", "fifo, hyperband, asha, median", "did you mean 'hyperband'"],
        id="scheduler-name",
    ),
    pytest.param(
        "scheduler: {type: asha, grace: 2}\nexperiments:\n  e: {run: my_func}\n",
        "scheduler.grace",
        ["unknown key 'grace'", "did you mean 'grace_period'", "max_t"],
        id="scheduler-option",
    ),
    pytest.param(
        "search: {type: hyperopt, n_initial: 3}\nexperiments:\n  e: {run: my_func}\n",
        "search.n_initial",
        ["did you mean 'n_initial_points'", "gamma"],
        id="search-option",
    ),
    pytest.param(
        "search: bayes\nexperiments:\n  e: {run: my_func}\n",
        "search",
        ["'bayes' is not allowed", "grid, random, hyperopt"],
        id="search-name",
    ),
    pytest.param(
        "search: hyperopt\nexperiments:\n  e:\n    run: my_func\n"
        "    config: {alpha: {grid_search: [1, 2]}, beta: 1}\n",
        "experiments.e.config.alpha",
        ["hyperopt cannot search a grid_search axis", "choice"],
        id="hyperopt-grid",
    ),
    pytest.param(
        "experiments:\n  e:\n    run: tests.user_modules.quadratic:train\n    scheduler: asha\n",
        "experiments.e.metric",
        ["the asha scheduler need a metric"],
        id="scheduler-without-metric",
    ),
    pytest.param(
        "search: grid\ne: {run: my_func}\n",
        "search",
        ["file-level setting of the app form", "experiments:"],
        id="classic-with-setting",
    ),
    pytest.param(
        "experiments:\n  e:\n    run: my_func\n    checkpoint_config: {checkpoint_frequency: 2}\n"
        "    config: {alpha: 1, beta: 1}\n",
        "experiments.e.checkpoint_config.checkpoint_frequency",
        ["class trainables"],
        id="ckpt-freq-function",
    ),
    pytest.param(
        "e:\n  run: tests.user_modules.quadratic:train\n"
        "  checkpoint_config: {checkpoint_at_end: true}\n",
        "e.checkpoint_config.checkpoint_at_end",
        ["class trainables", "'tests.user_modules.quadratic:train' is a function"],
        id="ckpt-at-end-user-function",
    ),
    pytest.param(
        "e:\n  run: tests.user_modules.class_trainables:Plain\n  metric: score\n  mode: max\n"
        "  checkpoint_config: {checkpoint_at_end: true}\n",
        "e.checkpoint_config.checkpoint_at_end",
        ["class trainables", "does not implement save_checkpoint"],
        id="ckpt-at-end-class-saving-none",
    ),
    pytest.param(
        "e:\n  run: my_func\n  config: {beta: 1}\n",
        "e.config",
        ["needs config key 'alpha'", "float", "add alpha:"],
        id="required-knob-missing",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  config: {lrr: 0.1}\n",
        "e.config.lrr",
        ["trainable 'es_cartpole' has no config key 'lrr'", "did you mean 'lr'", "sigma"],
        id="unknown-knob",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  config: {lr: fast}\n",
        "e.config.lr",
        ["reads 'lr' as float, but got 'fast'"],
        id="knob-type",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  config: {population: {uniform: [8, 64]}}\n",
        "e.config.population",
        ["reads 'population' as int, but uniform draws floats", "randint"],
        id="knob-sampler-type",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  config: {episodes: {choice: [1, 2.5]}}\n",
        "e.config.episodes",
        ["reads 'episodes' as int, but got 2.5"],
        id="knob-choice-type",
    ),
    pytest.param(
        "'bad name/x': {run: my_func}\n",
        "bad name/x",
        ["not a plain folder name"],
        id="experiment-name",
    ),
    pytest.param(
        "'-x': {run: my_func}\n",
        "-x",
        ["not a plain folder name", "allowed: letters", "'-' and '.' (never first)"],
        id="experiment-name-starting-with-a-dash",
    ),
    pytest.param(
        "smoke: {run: my_func}\n",
        "smoke",
        ["the folder --smoke runs write to"],
        id="experiment-named-as-the-smoke-folder",
    ),
    pytest.param(
        '"name\\n": {run: my_func}\n',
        "name\\n",
        ["not a plain folder name", "'name\\n'"],
        id="experiment-name-ending-in-a-newline",
    ),
    pytest.param(
        'e: {run: my_func, config: {alpha: 1, beta: 1, "x\\u202e\\x9bq": 2}}\n',
        "e.config.x\\u202e\\x9bq",  # a bidi override and a C1 control shown escaped
        ["no config key 'x\\u202e\\x9bq'"],
        id="bidi-and-c1-in-a-key",
    ),
    pytest.param(  # an empty metric read as none: the trainable's default
        'metric: ""\nexperiments:\n  e: {run: my_func, config: {alpha: 1, beta: 1}}\n',
        "metric",
        ["metric is a result key or a list of them", "got ''"],
        id="empty-metric",
    ),
    pytest.param(
        "experiments:\n  e: {run: tests.user_modules.quadratic:train, mode: [max, min], "
        'metric: [score, " "]}\n',
        "experiments.e.metric",
        ["metric is a result key or a list of them", "got ['score', ' ']"],
        id="blank-objective",
    ),
    pytest.param(
        "experiments:\n  e: {run: tests.user_modules.quadratic:train, metric: score, mode: max,"
        ' constraints: {"": {max: 1}}}\n',
        "experiments.e.constraints",
        ["'' is not a metric name"],
        id="empty-constraint-key",
    ),
    pytest.param(
        'expect: {smoke: {"": {min: 0}}}\nexperiments:\n  e: {run: my_func}\n',
        "expect.smoke",
        ["'' is not a metric name"],
        id="empty-expect-key",
    ),
    pytest.param(  # every key naming a result key is a MetricName: none may be empty
        "experiments:\n  e: {run: tests.user_modules.quadratic:train, metric: score, mode: max,"
        ' checkpoint_config: {checkpoint_score_attribute: ""}}\n',
        "experiments.e.checkpoint_config.checkpoint_score_attribute",
        ["'' is not a metric name"],
        id="empty-checkpoint-score-attribute",
    ),
    pytest.param(  # Tune's classic form and its legacy spelling, read as the key above
        'e: {run: my_func, checkpoint_score_attr: " "}\n',
        "e.checkpoint_config.checkpoint_score_attribute",
        ["' ' is not a metric name"],
        id="blank-checkpoint-score-attr",
    ),
    pytest.param(
        'e: {run: tests.user_modules.quadratic:train, stop: {"": 3}}\n',
        "e.stop",
        ["'' is not a metric name"],
        id="empty-stop-key",
    ),
    pytest.param(
        "experiments:\n  e: {run: tests.user_modules.quadratic:train, metric: score, mode: max,"
        ' scheduler: {type: asha, time_attr: ""}}\n',
        "experiments.e.scheduler.time_attr",
        ["'' is not a metric name"],
        id="empty-time-attr",
    ),
    pytest.param(
        "e: {run: my_func, config: {alpha: 1, true: 2}}\n",
        "e.config.True",
        ["a key must be text, but YAML reads true as True", "quote it: 'true':"],
        id="boolean-config-key",
    ),
    pytest.param(
        "%s: {run: my_func}\n" % ("名" * 70),
        "名" * 70,
        ["210 bytes long", "at most 200 bytes"],
        id="experiment-name-too-long-for-its-lock-file",
    ),
]


@pytest.mark.parametrize("text, path, words", BAD_SPECS)
def test_bad_spec_gives_one_clear_message(
    cli, write_spec, tmp_path, monkeypatch, text, path, words
):
    """One line, exit 2, nothing written and no results folder claimed: storage is not even
    asked (a bucket may hang) before the plan passed its checks."""
    from tune_app.rundir.location import RunLocation

    def asked(*args: object) -> None:
        raise AssertionError("storage asked before the plan's checks")

    monkeypatch.setattr(RunLocation, "fresh_all", asked)
    spec_file = write_spec(text)
    out_dir = tmp_path / "out"
    result = cli("run", spec_file, "--storage-path", out_dir)
    refused(result, *words, file=spec_file, path=path)
    assert not out_dir.exists() and "results in" not in result.out


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        *(("TUNE_GLOBAL_CHECKPOINT_S", v, "auto, or seconds") for v in ("abc", "-1", "nan")),
        ("TUNE_RESULT_BUFFER_LENGTH", "abc", "a whole number of results"),
        ("TUNE_RESULT_BUFFER_LENGTH", "2.5", "a whole number of results"),
        ("TUNE_RESULT_BUFFER_MAX_TIME_S", "", "seconds, a number"),
    ],
)
def test_a_tune_variable_tune_cannot_read_is_refused(
    cli, write_spec, tmp_path, monkeypatch, name, value, allowed
):
    monkeypatch.setenv(name, value)
    spec_file, out_dir = write_spec(GOOD), tmp_path / "out"
    for command in ("validate", "run"):
        result = cli(command, spec_file, "--storage-path", out_dir)
        refused(result, f"{name} is '{value}'", allowed, file=spec_file)
    assert not out_dir.exists()


@pytest.mark.parametrize(
    "make, words",
    [
        pytest.param(lambda d: d / "missing.yaml", "no such file", id="missing"),
        pytest.param(lambda d: d, "is a directory", id="directory"),
        # Read as a file, a pipe waited for a writer that never came: validate hung.
        pytest.param(lambda d: os.mkfifo(d / "ff") or d / "ff", "not a regular file", id="pipe"),
    ],
)
def test_bad_paths(cli, tmp_path, make, words):
    refused(cli("validate", make(tmp_path)), words)


@pytest.mark.parametrize(
    "content, words",
    [
        pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\xff", "not a text file", id="binary"),
        pytest.param(b"import os\nprint(os.name)\n", "top level must be a mapping", id="python"),
        pytest.param(b"<spec><run>x</run></spec>\n", "top level must be a mapping", id="xml"),
        pytest.param(b"# nothing but a comment\n\n", "the file is empty", id="comments"),
        pytest.param(b"e: !!python/name:os.system\n", "unsupported YAML tag", id="python-tag"),
        pytest.param(b"e: {run: my_func}\ne: {run: my_func}\n", "duplicate key 'e'", id="dup"),
    ],
)
def test_files_that_are_not_specs(cli, tmp_path, content, words):
    path = tmp_path / "spec.yaml"
    path.write_bytes(content)
    for command in ("validate", "run"):
        refused(cli(command, path, "--storage-path", tmp_path / "o"), words, file=path)
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GOOD)
    path.chmod(0)
    refused(cli("validate", path), "cannot be read (permission denied)")


@pytest.mark.parametrize("command", ["resume", "analyze", "report"])
@pytest.mark.parametrize(
    "make, words",
    [
        pytest.param(lambda d: d / "missing", "does not exist", id="missing"),
        pytest.param(  # not a SpecError: the same escaping
            lambda d: d / "m\u202e\x9b", "m\\u202e\\x9b does not exist", id="missing-escaped"
        ),
        pytest.param(lambda d: d, "holds no tune_app run", id="not-a-run"),
        pytest.param(lambda d: d / "f.txt", "is not a folder", id="file"),
    ],
)
def test_folder_commands_refuse_what_is_not_a_run(cli, tmp_path, command, make, words):
    (tmp_path / "f.txt").write_text("x")
    refused(cli(command, make(tmp_path)), words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]  # nothing written


@pytest.mark.parametrize(
    ("word", "choices", "hint"),
    [
        pytest.param(
            "episode_return_mean",
            ["episode_len_mean", "env_runners/episode_return_mean"],
            "did you mean 'env_runners/episode_return_mean'?",
            id="a-key-under-a-group-not-a-similar-one",
        ),
        pytest.param(
            "acc",
            ["val/acc", "acc_top5", "evaluation/val/acc"],
            "did you mean 'val/acc' or 'evaluation/val/acc'?",
            id="shortest-path-first",
        ),
        pytest.param("lr", ["optim.lr", "lr_decay"], "did you mean 'optim.lr'?", id="dotted"),
        pytest.param(
            "grace", ["grace_period", "max_t"], "did you mean 'grace_period'?", id="prefix"
        ),
        pytest.param("scor", ["score", "time"], "did you mean 'score'?", id="similar"),
        pytest.param("acc", ["val/accuracy"], None, id="a-prefix-of-a-leaf-is-not-the-leaf"),
        pytest.param(
            "Cartpole-v1",
            ["phys2d/CartPole-v1", "CartPole-v1", "CartPole-v0"],
            "did you mean 'CartPole-v1'?",
            id="the-same-in-another-case-before-a-grouped-one",
        ),
    ],
)
def test_near_miss_hints(word, choices, hint):
    from tune_app.errors import did_you_mean

    assert did_you_mean(word, choices) == hint


def test_usage_error_exits_2(cli):
    with pytest.raises(SystemExit) as info:
        cli("frobnicate")
    assert info.value.code == 2


def test_shared_flags_read_the_same_in_every_command(capsys):
    """A flag several commands take is defined once (a parent parser): its help is the same
    everywhere, never "as for run"."""
    from tune_app.cli.commands import COMMANDS, main

    helps = {}
    for command in COMMANDS:
        with pytest.raises(SystemExit) as done:
            main([command.name, "--help"])
        assert done.value.code == 0
        helps[command.name] = capsys.readouterr().out
        assert "as for run" not in helps[command.name]
    for flag, commands in [
        ("--address ADDRESS  join the Ray cluster at ADDR", ["run", "resume"]),
        ("--junit FILE       write a JUnit XML report", ["run", "resume"]),
        ("-q, --quiet        print only the final summary", ["run", "resume"]),
        ("write results here instead of the spec's storage_path", ["run", "validate"]),
    ]:
        assert all(" ".join(flag.split()) in " ".join(helps[c].split()) for c in commands), flag


def test_debug_shows_the_traceback(cli, write_spec):
    result = cli("--debug", "validate", write_spec("e: {run: my_fnc}\n"))
    assert result.code == 2 and "Traceback" in result.err


def test_validate_and_bad_run_never_import_ray(write_spec, tmp_path):
    good, bad = write_spec(GOOD, "good.yaml"), write_spec("e: {run: my_fnc}\n", "bad.yaml")
    probe = (
        "import sys; from tune_app.cli import main;"
        f"a = main(['validate', {str(good)!r}]);"
        f"b = main(['run', {str(bad)!r}, '--storage-path', {str(tmp_path / 'o')!r}]);"
        "print(a, b, 'ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-3:] == ["0", "2", "False"]


def test_list_shows_every_trainable_with_metric_and_knobs(cli):
    result = cli("list")
    assert result.code == 0
    assert "my_func: classic Tune example" in result.out
    assert "es_cartpole:" in result.out and "episode_return_mean (max)" in result.out
    assert "population  int, default 32" in result.out


def test_list_shows_rllib_algorithms_and_every_key_of_one(cli):
    result = cli("list")
    for name in ("PPO", "APPO", "IMPALA", "DQN", "SAC"):
        assert f"{name}: RLlib algorithm" in result.out
    keys = cli("list", "PPO")
    assert keys.code == 0
    assert "num_epochs = 30" in keys.out and "minibatch_size = 128" in keys.out
    assert "num_sgd_iter" in keys.out.splitlines()[-1]  # only among the legacy names
    wrong = cli("list", "PP0")
    assert wrong.code == 2 and "did you mean 'PPO'" in wrong.err


@pytest.mark.parametrize(
    "run",
    [
        "sentinel:train; import os",
        "sentinel.train()",
        "../sentinel:train",
        "sentinel:train:x",
        "sentinel:",
    ],
)
def test_run_values_outside_the_three_forms_are_refused_before_any_import(
    cli, write_spec, tmp_path, run
):
    user_module("sentinel.py", tmp_path, "sentinel.py")
    spec_file = write_spec(f"e:\n  run: {run!r}\n")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o")
    assert result.code == 2 and "e.run" in result.err
    assert "an RLlib algorithm such as PPO, or package.module:function" in result.err
    assert not (tmp_path / "imported.txt").exists()


def test_validate_finds_a_user_module_without_running_it(cli, write_spec, tmp_path):
    user_module("sentinel.py", tmp_path, "sentinel.py")
    result = cli("validate", write_spec("e: {run: 'sentinel:train'}\n"))
    assert result.code == 0, result.err
    assert not (tmp_path / "imported.txt").exists()


@pytest.mark.parametrize(
    ("first", "error", "words"),
    [
        pytest.param(
            "raise RuntimeError('needs a GPU driver')",
            "RuntimeError: needs a GPU driver",
            (),
            id="raises",
        ),
        pytest.param(
            "import no_such_dependency_xyz",
            "ModuleNotFoundError",
            ("no_such_dependency_xyz",),
            id="a-dependency-missing",
        ),
    ],
)
def test_a_module_that_fails_to_import_is_named_with_its_error(
    cli, write_spec, tmp_path, first, error, words
):
    (tmp_path / "broken.py").write_text(f"{first}\n\n\ndef train(config):\n    pass\n")
    spec_file = write_spec("e: {run: 'broken:train', metric: loss, mode: min}\n")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o")
    refused(result, f"e.run: importing module 'broken' failed: {error}", *words)
    assert not (tmp_path / "o").exists()


def test_version_names_the_app_and_ray(cli, capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        cli("--version")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert f"tune_app {version('tune_app')}" in out and f"Ray {version('ray')}" in out


def test_a_missing_spec_says_where_it_was_looked_for(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("validate", "specs/nope.yaml")
    assert result.code == 2
    assert f"looked for {tmp_path / 'specs' / 'nope.yaml'} (relative to {tmp_path})" in result.err


def _summary_of(write_spec, capsys, config, width, storage_path=None):
    """The summary table of GOOD's plan, its best trial `a1b2c_00017` of `config`, printed
    `width` columns wide; and the plan."""
    from tune_app import spec
    from tune_app.cli.console import print_summaries
    from tune_app.plan.make import make_plan
    from tune_app.rundir.records import RunSummary, TrialOutcome

    plan = make_plan(spec.load(write_spec(GOOD)), cpus=2, storage_path=storage_path)
    best = TrialOutcome("a1b2c_00017", "TERMINATED", config, 0.987654321, 2, "t")
    print_summaries(plan, [RunSummary("e", "mean_accuracy", "max", 12.5, [best])], width=width)
    return capsys.readouterr().out, plan


def test_the_summary_table_fits_80_columns_without_cutting_trial_ids(write_spec, capsys):
    config = {"alpha": 0.123456789, "beta": 2, "comment": "x" * 120}
    out, _ = _summary_of(write_spec, capsys, config, width=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "a1b2c_00017" in out


def test_the_summary_prints_a_storage_path_as_written(write_spec, capsys, tmp_path):
    """Square brackets are rich's markup: `[bold]` and `[/]` were dropped from the path shown
    (and a `[/]` with nothing to close ended the command with a MarkupError, after the run)."""
    where = tmp_path / "[bold]runs[/]"
    out, _ = _summary_of(write_spec, capsys, {"alpha": 0.5}, width=200, storage_path=str(where))
    assert f"results: {where / 'e'}" in out


def test_a_storage_path_under_a_file_is_refused_before_anything_runs(cli, write_spec, tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    spec = write_spec("e:\n  run: my_func\n  config: {alpha: 0.5, beta: 1}\n")
    for command in ("validate", "run"):
        result = cli(command, spec, "--storage-path", tmp_path / "taken" / "results")
        words = "--storage-path: results cannot be written there", f"{tmp_path / 'taken'} is a file"
        refused(result, *words)
    assert (tmp_path / "taken").read_text() == "not a folder"


def test_a_relative_storage_path_is_shown_resolved(cli, write_spec, tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    spec = write_spec("e:\n  run: my_func\n  config: {alpha: 0.5, beta: 1}\n")
    result = cli("validate", spec, "--storage-path", "../../x")
    assert result.code == 0 and f"results    {tmp_path / 'x' / 'e'}" in result.out, result.out


def test_the_summary_of_a_search_of_nothing_names_what_ran_not_its_whole_config(write_spec, capsys):
    config = {"alpha": 0.5, "beta": 1, **{f"rllib_key_{i}": i for i in range(200)}}
    out, plan = _summary_of(write_spec, capsys, config, width=200)
    assert plan.experiments[0].searched == ()
    assert "nothing searched: my_func" in out and "rllib_key_" not in out


@pytest.mark.parametrize("scheme", ["ray://", ""], ids=["client", "gcs"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_an_address_with_nothing_there_fails_fast_in_one_line(
    cli, write_spec, tmp_path, scheme, command
):
    """`--address ray://HOST:PORT` with nothing there took 31 s and printed Ray's raw
    UserWarning before the app's line: a TCP probe refuses it before ray.init."""
    from tests.conftest import free_port

    address = f"{scheme}127.0.0.1:{free_port()}"
    spec_file = write_spec("e:\n  run: es_cartpole\n  stop: {training_iteration: 2}\n")
    began = time.monotonic()
    result = cli(command, spec_file, "--address", address, "--storage-path", tmp_path / "out")
    assert time.monotonic() - began < 10
    line = refused(result, file=spec_file, path="--address")
    what = "the Ray client server" if scheme else "the cluster"
    assert line.startswith(f"error: {spec_file}: --address: cannot join {what} at "), line
    assert f"at {address}: Connection refused; start it with ray start --head" in line
    assert "Warning" not in result.err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("scheme", ["ray://", ""], ids=["client", "gcs"])
def test_an_address_from_ray_address_is_blamed_on_it_not_on_the_option(
    cli, write_spec, tmp_path, monkeypatch, scheme
):
    """`RAY_ADDRESS=HOST:PORT run` with nothing there blamed `--address`, never given."""
    from tests.conftest import free_port

    monkeypatch.setenv("RAY_ADDRESS", f"{scheme}127.0.0.1:{free_port()}")
    spec_file = write_spec("e:\n  run: es_cartpole\n  stop: {training_iteration: 2}\n")
    result = cli("run", spec_file, "--storage-path", tmp_path / "out")
    words = "Connection refused; unset RAY_ADDRESS to start a local Ray, or start it with"
    refused(result, words, file=spec_file, path="RAY_ADDRESS")
    assert "--address" not in result.err and not (tmp_path / "out").exists()


def test_a_cluster_that_asks_for_a_token_this_shell_lacks_is_said_at_once(
    cli, write_spec, tmp_path, monkeypatch
):
    """A cluster started with RAY_AUTH_MODE=token, joined without it: 20 s of the GCS client's
    errors, then 'cannot join ... check the address'. A GCS stand-in refuses every call as
    Ray's does without a token (UNAUTHENTICATED)."""
    from concurrent import futures

    import grpc

    def unauthenticated(request, context):
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "Invalid or missing authentication token")

    class Refuse(grpc.GenericRpcHandler):
        def service(self, details):
            return grpc.unary_unary_rpc_method_handler(unauthenticated)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.add_generic_rpc_handlers((Refuse(),))
    server.start()
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    spec_file = write_spec("e:\n  run: es_cartpole\n  stop: {training_iteration: 2}\n")
    began = time.monotonic()
    try:
        result = cli(
            "run", spec_file, "--address", f"127.0.0.1:{port}", "--storage-path", tmp_path / "out"
        )
    finally:
        server.stop(None)
    assert time.monotonic() - began < 10
    words = "asks for Ray's authentication token", "export RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN"
    refused(result, *words, file=spec_file, path="--address")
    assert not (tmp_path / "out").exists()


def test_address_auto_knocks_where_ray_would_wait(cli, write_spec, tmp_path, monkeypatch):
    """`--address auto` where Ray finds a head that is gone (a stale `ray start` record, or
    RAY_ADDRESS) waited over 2 minutes in ray.init, printing only Ray's GCS lines: the probe
    now knocks at the address Ray's own lookup gives."""
    from tests.conftest import free_port

    port = free_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # what Ray's lookup of "auto" reads
    spec_file = write_spec("e:\n  run: es_cartpole\n  stop: {training_iteration: 2}\n")
    began = time.monotonic()
    result = cli("validate", spec_file, "--address", "auto")
    assert time.monotonic() - began < 10
    # (Ray's lookup gives the node's address for 127.0.0.1)
    words = f":{port}: RAY_ADDRESS, or the last `ray start` on this machine): Connection refused"
    refused(result, "cannot join the cluster at auto (", words, file=spec_file, path="--address")


def test_an_address_that_never_answers_is_given_up_after_the_probe(monkeypatch):
    import socket

    from tune_app.cluster import PROBE_S, _reachable
    from tune_app.errors import SpecError
    from tune_app.resources import ClusterAddress

    waited: list[float] = []

    def silent(target, timeout):
        waited.append(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(SpecError) as err:
        _reachable(ClusterAddress("ray://10.0.0.5:10001"))
    assert waited == [PROBE_S] and PROBE_S <= 5
    assert f"nothing answered on port 10001 within {PROBE_S:g} s" in str(err.value)
    assert "ray:// on port 10001" in str(err.value)  # where a head serves Ray client


def test_list_of_an_algorithm_says_what_each_key_is_for_and_filters_by_a_word(cli):
    """`list PPO` printed 207 `key = default` lines with no meaning: each key now carries the
    first sentence RLlib's own docstrings give it, and a WORD keeps the keys it names."""
    from tune_app import rllib

    for name in rllib.ALGORITHMS:
        keys = rllib.algorithm_keys(name)
        assert len(keys.docs) >= 0.8 * len(keys.defaults), name  # the setters' Args: cover most
        assert set(keys.docs) <= set(keys.defaults), name
    every = cli("list", "PPO").out
    assert "  lambda = 1.0: The lambda parameter for General Advantage Estimation (GAE).\n" in every
    assert "  num_env_runners = " in every and "Number of EnvRunner actors" in every
    assert "callbacks_on_episode_end = None: " in every  # callbacks(on_episode_end=...)'s Arg
    total = len(rllib.algorithm_keys("PPO").defaults)
    lr = cli("list", "PPO", "lr")
    assert lr.code == 0 and lr.out.startswith(f"PPO: 1 of {total} config keys"), lr.out
    assert lr.out.splitlines()[1].startswith("  lr = 5e-05: The learning rate")
    gae = cli("list", "PPO", "gae").out.splitlines()  # in a name or, as a word, in a description
    assert {"use_gae", "lambda"} <= {line.split(" = ")[0].strip() for line in gae[1:]}, gae
    old = cli("list", "PPO", "num_workers")  # a legacy name a spec may write
    assert old.code == 0 and old.out.startswith(
        "num_workers: a legacy key, read as num_env_runners\n"
    ), old.err
    assert old.out.splitlines()[2].startswith("  num_env_runners = "), old.out
    none = cli("list", "PPO", "lrr")
    assert none.code == 2 and "no config key of PPO has 'lrr'" in none.err
    assert "did you mean 'lr'" in none.err and none.out == ""
    trainable = cli("list", "es_cartpole", "lr")
    assert trainable.code == 2 and "list es_cartpole alone" in trainable.err


def test_the_docstring_args_parser_reads_each_parameter_s_first_sentence():
    from tune_app.rllib.snapshot import _args, _first_sentence

    doc = (
        "Sets the training related configuration.\n\nArgs:\n"
        "    lambda_: The lambda parameter, i.e. the GAE weight. More text\n"
        "        on a second line.\n"
        "    lr (float): The learning rate\n        of the optimizer. See e.g. Adam.\n\n"
        "Returns:\n    This updated AlgorithmConfig object.\n"
    )
    found = _args(doc)
    assert set(found) == {"lambda_", "lr"}
    assert _first_sentence(found["lambda_"]) == "The lambda parameter, i.e. the GAE weight."
    assert _first_sentence(found["lr"]) == "The learning rate of the optimizer."
    assert _first_sentence("x " * 200).endswith("...") and len(_first_sentence("x " * 200)) == 160


@pytest.mark.parametrize(
    "error, first, line",
    [
        pytest.param(ConnectionError(), "", "ConnectionError", id="no-text"),
        pytest.param(ValueError("\n  bad value \nmore"), "bad value", "bad value", id="padded"),
        pytest.param(OSError("one line"), "one line", "one line", id="one-line"),
    ],
)
def test_an_errors_line_is_its_first_text_or_else_its_type(error, first, line):
    """A message built from an error's text never fails on one that has none (joining a
    cluster whose `ray.init` raised a bare ConnectionError raised IndexError)."""
    assert first_line(error) == first and error_line(error) == line
