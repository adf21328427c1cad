"""A spec is data: it can name trainables and envs, never run arbitrary callables, and loading
it is bounded in time, memory and message length. Each case: exit 2, one line naming the file,
no traceback, nothing written."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.conftest import ROOT, refused

NOT_USER_CODE = "is part of Python or of tune_app, not a module of trainables or envs"
NOT_TRAINABLE = "not a trainable"
INSTALLED_FUNCTION = "is a function of an installed package that does not declare it as a trainable"


def _bomb(levels: int = 9, width: int = 9) -> str:
    text = "a0: &a0 [" + ", ".join(["lol"] * width) + "]\n"
    for i in range(1, levels + 1):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]\n"
    return text + f"e:\n  run: my_trainables:train\n  config: {{x: *a{levels}}}\n"


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        pytest.param("subprocess:call", NOT_USER_CODE, id="stdlib-function"),
        pytest.param("os:system", NOT_USER_CODE, id="os-system"),
        pytest.param("os.path:join", NOT_USER_CODE, id="stdlib-submodule"),
        pytest.param("builtins:exec", NOT_USER_CODE, id="builtin-module"),
        pytest.param("tune_app.cli:main", NOT_USER_CODE, id="the-app-itself"),
        pytest.param("reexports:call", NOT_USER_CODE, id="imported-from-stdlib"),
        pytest.param("reexports:needs_three", NOT_TRAINABLE, id="wrong-signature"),
        pytest.param("reexports:no_args", NOT_TRAINABLE, id="takes-no-config"),
        # A name `import X (as Y)` binds: validate passed it, and run refused it.
        pytest.param(
            "reexports:subprocess", "'subprocess' is a module, not a trainable", id="a-module"
        ),
        pytest.param("reexports:osp", "'osp' is a module, not a trainable", id="aliased-module"),
        pytest.param("reexports:coro", NOT_TRAINABLE, id="async-function"),
        # The running script: what to do, not "defines no 'train'" (its __main__ is tune_app's).
        pytest.param(
            "__main__:train",
            "'__main__:train' names __main__, the script Python started, which Tune's workers "
            "cannot import; allowed: module:name naming a module file (beside the spec, in the "
            "working directory, or installed); move train into a module file, e.g. train.py "
            "beside the spec, and write run: train:train",
            id="main-module",
        ),
        pytest.param("__main__:Trainer", "write run: trainer:Trainer", id="main-module-class"),
        # An installed package's function that its __init__ re-exports from a submodule (in an
        # if or try block too): validate passed it, and run refused it.
        pytest.param("numpy:load", INSTALLED_FUNCTION, id="installed-reexported-function"),
        pytest.param("gymnasium:make", INSTALLED_FUNCTION, id="installed-reexported-make"),
        pytest.param("ray:get", INSTALLED_FUNCTION, id="installed-reexported-ray-get"),
    ],
)
def test_run_must_name_a_trainable_of_user_code(cli, write_spec, tmp_path, run, expected):
    _reexports(tmp_path)
    spec_file = write_spec(f"e:\n  run: '{run}'\n  config: {{args: [touch, {tmp_path}/pwned]}}\n")
    for command in ("validate", "run"):
        refused(cli(command, spec_file, "--storage-path", tmp_path / "o"), "e.run", expected)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "o").exists()
    assert not (tmp_path / "imported.txt").exists()  # validate and run refused before importing


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        # Names the source does not define plainly: only the imported object tells.
        pytest.param("reexports:aliased", NOT_USER_CODE, id="assigned-from-stdlib"),
        pytest.param("reexports:NotTrainable", "not a tune.Trainable", id="plain-class"),
        pytest.param("reexports:instance", NOT_TRAINABLE, id="an-object"),
        # What the spec wrote is named, not where the object's type lives ('functools.partial').
        pytest.param(
            "reexports:aliased", "'reexports:aliased' (subprocess.call)", id="names-the-reference"
        ),
        pytest.param(
            "reexports:preset",
            "'preset' is a functools.partial of train, not a trainable",
            id="partial-of-a-function",
        ),
    ],
)
def test_run_checks_the_imported_object_before_anything_is_written(
    cli, write_spec, tmp_path, run, expected
):
    _reexports(tmp_path)
    # A metric named: with none, a warning saying so comes before the refusal.
    spec_file = write_spec(f"e:\n  run: '{run}'\n  metric: score\n  mode: max\n")
    refused(cli("run", spec_file, "--storage-path", tmp_path / "o"), expected)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param("subprocess:Popen", NOT_USER_CODE, id="stdlib-class"),
        pytest.param("reexports:no_args", "is a function, not an environment", id="a-function"),
        pytest.param("__main__:GridEnv", "write env: gridenv:GridEnv", id="main-module"),
    ],
)
def test_env_must_name_an_env_class_of_user_code(cli, write_spec, tmp_path, env, expected):
    _reexports(tmp_path)
    text = f"e:\n  run: PPO\n  env: '{env}'\n  config: {{num_env_runners: 1}}\n"
    refused(cli("validate", write_spec(text)), "e.env", expected)


def test_an_env_that_is_not_a_gymnasium_env_is_refused_on_loading(tmp_path):
    from tune_app.envs import resolve_env
    from tune_app.errors import SpecError

    _reexports(tmp_path)
    ref = resolve_env("reexports:NotTrainable", tmp_path)
    with pytest.raises(SpecError, match="class NotTrainable, not an environment"):
        ref.load()


def test_a_trainable_of_user_code_still_resolves(tmp_path):
    from tune_app.registry import resolve

    _reexports(tmp_path)
    fn = resolve("reexports:train", tmp_path).load()
    assert fn.__name__ == "train"


HOSTILE = {
    "alias-bomb": (_bomb(), "expands to more than 100,000 values"),
    "string-bomb": (  # 2,000 values, 1.8 GB of text once expanded
        "s: &s '" + "x" * 900_000 + "'\ne:\n  run: x\n  config: {a: [" + "*s, " * 1999 + "*s]}\n",
        "expands to more than 10,000,000 characters",
    ),
    "deep-lists": (
        "e:\n  run: x\n  config: {a: " + "[" * 5000 + "]" * 5000 + "}\n",
        "nests deeper",
    ),
    "deep-maps": (
        "e:\n  config:\n    a: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
        "nests deeper",
    ),
    "self-alias": ("e: &e\n  run: fn\n  config: {a: *e}\n", "refers to a value that holds it"),
    "huge-file": ("e:\n  run: x\n  config: {a: '" + "x" * 1_100_000 + "'}\n", "larger than"),
    "huge-int": ("e:\n  run: x\n  config: {a: " + "9" * 5000 + "}\n", "cannot read"),
    "seed-count": ("e:\n  run: my_func\n  seeds: 100000000\n", "at most 10,000 seeds"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_yaml_is_refused_fast_in_little_memory_with_the_file_named(tmp_path, name):
    text, expected = HOSTILE[name]
    spec_file = tmp_path / f"{name}.yaml"
    spec_file.write_text(text)
    probe = (
        "import re, sys, time\n"
        "from tune_app.cli import main\n"
        "t = time.process_time(); code = main(['validate', sys.argv[1]])\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(code, time.process_time() - t, peak, file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(spec_file)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)),
    )
    *lines, measured = out.stderr.strip().splitlines()
    code, seconds, peak_kb = measured.split()
    assert int(code) == 2 and len(lines) == 1, out.stderr
    assert str(spec_file) in lines[0] and expected in lines[0]
    assert "Traceback" not in out.stderr and "set_int_max_str_digits" not in lines[0]
    assert len(lines[0]) < 600
    # Bounded work: under 10 s of the process's own CPU time (not wall time, which a loaded
    # machine stretches; an unbounded expansion takes minutes) and 200 MB peak resident memory
    # (VmHWM, this process's own, where ru_maxrss would also count the forked test process).
    assert float(seconds) < 10.0 and int(peak_kb) < 200_000, measured


def test_a_spec_at_the_bounds_still_loads(tmp_path):
    from tune_app import spec

    nested = "{a: " * 60 + "1" + "}" * 60
    wide = "[" + ", ".join(["1"] * 50_000) + "]"
    text = f"e:\n  run: my_trainables:train\n  config:\n    deep: {nested}\n    wide: {wide}\n"
    data = spec.read_yaml_text(text, tmp_path / "ok.yaml")
    assert len(data["e"]["config"]["wide"]) == 50_000


def test_no_message_prints_more_than_a_few_hundred_characters_of_a_value(cli, write_spec):
    result = cli("validate", write_spec(f"e:\n  run: '{'x' * 100_000}'\n  config: {{}}\n"))
    assert len(refused(result, "characters)")) < 1_000


def _reexports(folder) -> None:
    (folder / "reexports.py").write_text(
        "import functools\n"
        "import os.path as osp\n"
        "import subprocess\n"
        "from subprocess import call\n"
        "from pathlib import Path\n"
        "Path(__file__).with_name('imported.txt').write_text('imported')\n"
        "aliased = subprocess.call\n"
        "instance = object()\n"
        "def train(config):\n    return None\n"
        "preset = functools.partial(train)\n"
        "def needs_three(a, b, c):\n    return None\n"
        "def no_args():\n    return None\n"
        "async def coro(config):\n    return None\n"
        "class NotTrainable:\n    pass\n"
    )


def test_a_gym_version_newer_than_any_registered_is_refused_not_run_as_another():
    """`env: CartPole-v999` ran CartPole-v1, with a warning calling it an old gym version: a
    typo ran another env. A version that is gone (older than the newest) is still read as it."""
    from tune_app.envs import resolve_env
    from tune_app.errors import SpecError

    with pytest.raises(SpecError, match="'CartPole-v999' is not a registered") as err:
        resolve_env("CartPole-v999")
    assert "CartPole-v1" in str(err.value)  # the near miss
    old = resolve_env("Pendulum-v0")
    assert old.env == "Pendulum-v1" and "an old gym version" in (old.note or "")
