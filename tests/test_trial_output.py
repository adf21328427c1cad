"""A failed trial says what failed, where in the user's code (`my_train.py:14`) and where its
error file and output are, in the run's output and in `analyze`; trials keep their stdout and
stderr in their folders by default; `analyze` never cuts a trial id."""

from __future__ import annotations

import json
import re
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.test_analyze import _experiment
from tune_app import failures, progress
from tune_app.rundir.location import RunLocation

RAY = sysconfig.get_paths()["purelib"] + "/ray/tune/trainable/function_trainable.py"
APP = str(Path(failures.__file__).parent / "callbacks.py")
STDLIB = sysconfig.get_paths()["stdlib"] + "/json/__init__.py"


def _traceback(*frames: tuple[str, int]) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line in frames:
        lines += [f'  File "{path}", line {line}, in f', "    x()"]
    return "\n".join([*lines, "KeyError: 'hidden'"])


@pytest.mark.parametrize(
    ("frames", "frame"),
    [
        pytest.param([(RAY, 250), ("/home/me/my_train.py", 14)], "my_train.py:14", id="user-last"),
        pytest.param(
            [(RAY, 250), ("/home/me/my_train.py", 14), ("/home/me/model.py", 3), (STDLIB, 9)],
            "model.py:3",
            id="innermost-user-frame-under-a-library-call",
        ),
        pytest.param([(RAY, 250), (APP, 9), (STDLIB, 9)], None, id="no-user-code"),
        pytest.param([("<string>", 1)], None, id="no-file"),
    ],
)
def test_the_innermost_frame_of_the_users_code_is_found(frames, frame):
    assert failures.user_frame(_traceback(*frames)) == frame
    text = f"Failure # 1 (occurred at 2026-01-01_00-00-05)\n{_traceback(*frames)}\n"
    found = failures.from_text(text)
    assert found.cause == "KeyError" and found.frame == frame


def test_a_failed_trials_line_names_the_error_the_users_frame_and_its_files(tmp_path):
    error = tmp_path / "error.txt"
    error.write_text(_traceback((RAY, 250), ("/home/me/my_train.py", 14)))
    folder = RunLocation(tmp_path / "out" / "e")
    lines: list[str] = []
    sink = SimpleNamespace(line=lines.append, snapshot=lambda snap: None)
    progress.attach("e", sink)
    try:
        callback = progress.ProgressCallback("e", "m", "max", ("x",), folder=folder, output=True)
        trial = SimpleNamespace(
            trial_id="abcde_00001",
            config={"x": 2},
            error_file=str(error),
            storage=SimpleNamespace(trial_dir_name="train_abcde_00001_1_x=2"),
            status="ERROR",
            last_result={},
        )
        callback.on_trial_error(0, [trial], trial)
    finally:
        progress.attach("e", None)
    trial_folder = tmp_path / "out" / "e" / "train_abcde_00001_1_x=2"
    assert lines == [
        f"[e] trial abcde_00001 failed: KeyError: 'hidden' at my_train.py:14, x=2; "
        f"error.txt, stdout in {trial_folder}"
    ]


# What Tune's error.txt holds for a class trainable whose setup raised: the actor is Tune's
# wrapper (`tune.with_resources`), the user's class (tagged per experiment) is in its repr.
SETUP_ERROR = (
    "Failure # 1 (occurred at 2026-11-28_08-35-29)\n"
    "The actor died because of an error raised in its creation task, "
    "\x1b[36mray::ResourceTrainable.__init__()\x1b[39m (pid=1604, ip=127.0.0.1, "
    "actor_id=5ab41b137832cce3b9e4e8b301000000, "
    "repr=<ray.tune.trainable.util.Missing_5944ae object at 0x7f535a6f2310>)\n"
    f'  File "{sysconfig.get_paths()["purelib"]}/ray/tune/trainable/trainable.py", line 151, '
    "in __init__\n"
    "    self.setup(copy.deepcopy(self.config))\n"
    '  File "{deep}/keyfail.py", line 8, in setup\n'
    '    self.width = config["hidden"]\n'
    "{error}\n"
)


@pytest.mark.parametrize(
    ("error", "params"),
    [
        pytest.param("KeyError: 'hidden'", ", lr=2", id="short-error"),
        pytest.param("KeyError: '" + "h" * 400 + "'", ", lr=2", id="long-error"),
        pytest.param(
            "KeyError: 'hidden'",
            ", " + ", ".join(f"p{i}=0.125" for i in range(30)),
            id="many-params",
        ),
    ],
)
def test_a_failed_trials_line_fits_one_line_and_names_the_users_class(tmp_path, error, params):
    deep = tmp_path / ("very_long_folder_name_" * 6) / "project"
    error_file = tmp_path / "error.txt"
    error_file.write_text(SETUP_ERROR.format(deep=deep, error=error))
    failure = failures.from_text(error_file.read_text())
    assert failure.frame == "keyfail.py:8"
    trial_folder = "Missing_5944ae_a3ad0_00001_1_lr=2_2026-11-28_08-35-22"
    files = failures.TrialFiles(
        str(deep / "results" / "keys"),
        trial_folder,
        ("error.txt", "stdout"),
    )
    line = failures.failure_line("[keys] trial a3ad0_00001", failure, params, files)
    assert len(line) <= failures.MAX_LINE, line
    assert line.startswith("[keys] trial a3ad0_00001 failed: KeyError: '")
    assert "Missing set-up" in line or "..." in line  # a long message is what gets cut
    assert "ResourceTrainable" not in line
    assert line.count(str(tmp_path)) <= 1  # the folder once, not once per file
    assert trial_folder in line and " at keyfail.py:8" in line
    if error == "KeyError: 'hidden'":
        assert "KeyError: 'hidden' (in Missing set-up) at keyfail.py:8" in line


def test_a_trial_folder_under_the_working_directory_is_named_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = failures.TrialFiles(f"{tmp_path}/out/e", "t_1", ("error.txt",))
    assert files.text() == "; error.txt in out/e/t_1"


def test_analyze_lists_failed_trials_with_their_frame_error_file_and_output(cli, tmp_path):
    exp = _experiment(tmp_path)
    trial = next(exp.glob("train_aaaaa_00003_*"))
    (trial / "stdout").write_text("epoch 1\n")
    table = cli("analyze", exp)
    assert table.code == 0, table.err
    assert (
        f"  aaaaa_00003: FloatingPointError: loss diverged at train.py:3; error: "
        f"{trial}/error.txt, output: {trial}/stdout"
    ) in table.out
    (read,) = json.loads(cli("analyze", exp, "--format", "json").out)
    (failed,) = [t for t in read["trials"] if t["status"] == "ERROR"]
    assert failed["frame"] == "train.py:3" and failed["stdout_file"] == f"{trial}/stdout"
    assert failed["error_file"] == f"{trial}/error.txt" and failed["stderr_file"] is None


def test_trials_keep_their_output_by_default_and_the_results_line_says_where(write_spec, tmp_path):
    from tune_app.cli.console import results_line
    from tune_app.plan.make import make_plan
    from tune_app.spec.resolve import load

    spec = load(write_spec("e:\n  run: my_func\n  config: {alpha: 0.5, beta: 1}\n"))
    assert spec.experiments[0].log_to_file is True
    assert "each trial's output (print) in its folder there: stdout, stderr" in results_line(
        make_plan(spec, storage_path=str(tmp_path))
    )
    off = load(
        write_spec("e:\n  run: my_func\n  log_to_file: false\n  config: {alpha: 1, beta: 1}\n")
    )
    assert "each trial's output" not in results_line(make_plan(off, storage_path=str(tmp_path)))


def test_analyze_never_cuts_a_trial_id(cli, tmp_path):
    exp = tmp_path / "e"
    exp.mkdir()
    searched = ["learning_rate", "hidden_units", "weight_decay", "batch_size", "seed"]
    run = {"experiment": "e", "metric": "score", "mode": "max", "searched": searched}
    (exp / "run.json").write_text(json.dumps(run))
    config = {k: 0.000123456789 for k in searched}
    rows = [
        {"trial_id": f"e3e8e_{i:05d}", "training_iteration": 1, "score": i, "config": config}
        for i in range(3)
    ]
    (exp / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = cli("analyze", exp)
    assert table.code == 0, table.err
    assert all(re.search(rf"\be3e8e_{i:05d}\b", table.out) for i in range(3)), table.out


def test_a_key_never_reported_is_offered_metrics_not_tunes_bookkeeping():
    from tune_app.plan.make import make_plan
    from tune_app.rundir.outcome import missing_keys_error
    from tune_app.rundir.records import RunSummary
    from tune_app.spec.resolve import loads

    spec = "e:\n  run: my_func\n  config: {alpha: 1, beta: 1}\n"
    (ep,) = make_plan(loads(spec, Path("s.yaml")), cpus=2).experiments
    reported = ["mean_accuracy", "hostname", "pid", "date", "node_ip", "timestamp", "trial_id"]
    summary = RunSummary("e", None, None, 1.0, missing={"stop.mean_acuracy": "mean_acuracy"},
                         reported=[*reported, "config/alpha"])  # fmt: skip
    text = str(missing_keys_error(ep, summary))
    assert "allowed: mean_accuracy;" in text and "did you mean 'mean_accuracy'" in text
    assert not any(word in text for word in ("hostname", "pid", "date", "node_ip"))
