"""The one gate for code a spec names (`tune_app.user_code`, `tune_app.rllib.code`): `run:`,
`env:` and every RLlib key whose value RLlib imports or calls. Installed packages reach a spec
only as a class of the role's base or an entry point they declare; RLlib never gets a dotted
path to import. Each refusal: exit 2, one line with the key path, nothing written or run."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import ROOT, refused, results_of, user_module
from tune_app.errors import SpecError
from tune_app.user_code import ENV, TRAINABLE, CodeRef, check, declared_refs, user_path
from tune_app.user_code.locating import shadowing

INSTALLED_FUNCTION = "a function of an installed package that does not declare it"


def _installed_package(site: Path, entry_points: str) -> None:
    """A package installed in `site` (outside the spec's folder), with its metadata."""
    (site / "labpkg").mkdir(parents=True)
    (site / "labpkg" / "__init__.py").write_text(
        "from ray import tune\n\n\n"
        "def train(config):\n    return {'score': 1}\n\n\n"
        "def helper(config):\n    open(config['path'], 'w').close()\n\n\n"
        "class Trainer(tune.Trainable):\n    def step(self):\n        return {'score': 1}\n"
    )
    info = site / "labpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labpkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _installed_package(site, "[tune_app.trainables]\nlab_train = labpkg:train\n")
    monkeypatch.syspath_prepend(str(site))
    declared_refs.cache_clear()
    yield tmp_path / "specs"
    declared_refs.cache_clear()


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        pytest.param("labpkg:helper", INSTALLED_FUNCTION, id="undeclared-function"),
        pytest.param("labpkg:nothing", "defines no 'nothing'", id="missing-name"),
        pytest.param(  # not `tune` (imported) nor `helper` (a function it does not declare)
            "labpkg:trian",
            "defines no 'trian'; allowed: Trainer, train; did you mean 'train'",
            id="missing-name-allowed-what-could-be",
        ),
    ],
)
def test_an_installed_package_reaches_a_spec_only_as_declared(installed, ref, expected):
    installed.mkdir()
    with pytest.raises(SpecError, match=expected) as err:
        check(ref, TRAINABLE, user_path(installed), "run")
    assert "tune_app.trainables" in str(err.value) or "defines no" in expected


def test_a_declared_function_and_a_trainable_class_of_an_installed_package_pass(installed):
    from tune_app.registry import resolve

    installed.mkdir()
    folders = user_path(installed)
    declared = check("labpkg:train", TRAINABLE, folders, "run")
    assert declared.declared and not declared.local
    assert declared.load()({}) == {"score": 1}
    assert check("labpkg:Trainer", TRAINABLE, folders, "run").load().__name__ == "Trainer"
    # and by the name the package declares it under
    assert resolve("lab_train", installed).run == "lab_train"
    assert resolve("lab_train", installed).kind.run == "labpkg:train"


@pytest.mark.parametrize(
    ("folder", "local"),
    [
        pytest.param("src", True, id="the-users-own-code"),
        pytest.param("venv/lib/site-packages", False, id="an-installed-package-still"),
    ],
)
def test_a_module_on_pythonpath_is_the_users_own_code(tmp_path, monkeypatch, folder, local):
    """`PYTHONPATH=src`: a function there is the user's, not an installed package's."""
    code = tmp_path / folder
    code.mkdir(parents=True)
    (code / "mytrain.py").write_text("def train(config):\n    return {'score': 1}\n")
    monkeypatch.setenv("PYTHONPATH", str(code))
    monkeypatch.syspath_prepend(str(code))  # as Python puts PYTHONPATH on sys.path
    (tmp_path / "specs").mkdir()
    folders = user_path(tmp_path / "specs")
    if local:
        assert check("mytrain:train", TRAINABLE, folders, "run").load()({}) == {"score": 1}
    else:
        with pytest.raises(SpecError, match=INSTALLED_FUNCTION):
            check("mytrain:train", TRAINABLE, folders, "run")


def test_a_local_rays_pythonpath_is_the_users_again_after_the_run(monkeypatch):
    """The workers' PYTHONPATH (the spec's folders first) is not left for a later spec of the
    same process to take for its own code."""
    from tune_app import cluster

    monkeypatch.setenv("PYTHONPATH", "src")
    monkeypatch.setattr(cluster, "local_pythonpath", lambda plan: "/spec/folder")
    monkeypatch.setattr(cluster, "TUNE_TRIAL_ENV", {})  # no variables left in this process
    monkeypatch.setattr(cluster, "worker_env", dict)
    monkeypatch.setattr(cluster.ray, "init", lambda **kwargs: None)
    monkeypatch.setattr(cluster.ray, "shutdown", lambda: None)
    with cluster.ray_for(SimpleNamespace(cpus=1), None, 0):
        assert os.environ["PYTHONPATH"] == "/spec/folder"
    assert os.environ["PYTHONPATH"] == "src"


def test_a_function_of_an_installed_package_is_refused_before_it_is_run(cli, write_spec, tmp_path):
    """The reported case: a YAML file with no .py beside it ran `touch` through mlflow."""
    spec = write_spec(
        f"e:\n  run: mlflow.utils.process:_exec_cmd\n  config: {{touch: 0, {tmp_path}/pwned: 0}}\n"
    )
    for command in ("validate", "run"):
        refused(cli(command, spec, "--storage-path", tmp_path / "o"), "e.run", INSTALLED_FUNCTION)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("named", "module"), [("json.py", "json"), ("random/__init__.py", "random")]
)
def test_a_file_beside_the_spec_named_as_pythons_own_module_is_refused(
    cli, write_spec, tmp_path, named, module
):
    """The spec's folder is on the path of every process a run starts: `json.py` there stopped
    the local Ray from starting, after 35 s, and `run: json:train` passed validate by dropping
    Python's json from the process for the file."""
    user_module("quadratic.py", tmp_path)
    (tmp_path / named).parent.mkdir(exist_ok=True)
    (tmp_path / named).write_text("X = 1\n")
    refused(
        cli("validate", write_spec("e:\n  run: quadratic:train\n")), "e.run", f"Python's '{module}'"
    )
    refused(cli("validate", write_spec(f"e:\n  run: {module}:train\n")), "part of Python")


@pytest.mark.parametrize(
    ("named", "shadowed"),
    [("ray.py", "the 'ray' module of the installed ray"), ("yaml/__init__.py", "installed PyYAML")],
)
def test_a_file_beside_the_spec_named_as_an_installed_module_is_refused(
    cli, write_spec, tmp_path, named, shadowed
):
    """`ray.py` beside the spec passed validate, then ran inside Ray's own processes (the spec's
    folder is first on their path): the run failed after 30 s with a misleading startup error."""
    user_module("quadratic.py", tmp_path)
    (tmp_path / named).parent.mkdir(exist_ok=True)
    (tmp_path / named).write_text("open('pwned', 'w').close()\n")
    result = cli("validate", write_spec("e:\n  run: quadratic:train\n"))
    refused(result, "e.run", f"{tmp_path / named.partition('/')[0]} has the name of", shadowed)


def test_a_package_installed_editable_from_its_folder_is_not_shadowing(tmp_path, monkeypatch):
    """Its distribution's code is that folder, as the app's own packages are the checkout's it
    runs from: the same module either way. The same name elsewhere shadows it."""
    for folder in ("proj", "other"):
        (tmp_path / folder / "mypkg").mkdir(parents=True)
        (tmp_path / folder / "mypkg" / "__init__.py").write_text("")
    info = tmp_path / "site" / "mypkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("mypkg\n")
    url = (tmp_path / "proj").as_uri()
    (info / "direct_url.json").write_text(f'{{"url": "{url}", "dir_info": {{"editable": true}}}}')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert list(shadowing((str(tmp_path / "proj"), str(ROOT)))) == []
    (found,) = shadowing((str(tmp_path / "other"),))
    assert found == (tmp_path / "other" / "mypkg", "the 'mypkg' module of the installed mypkg")


def test_an_env_of_an_installed_package_must_be_an_env_class(installed):
    installed.mkdir()
    with pytest.raises(SpecError, match="is a function, not an environment"):
        check("labpkg:train", ENV, user_path(installed), "env")


@pytest.mark.parametrize(
    ("ref", "role"),
    [
        pytest.param("ray.tune:Trainable", TRAINABLE, id="trainable"),
        pytest.param(
            "ray.tune.trainable.function_trainable:FunctionTrainable", TRAINABLE, id="function"
        ),
        pytest.param("ray.rllib.algorithms.algorithm:Algorithm", TRAINABLE, id="algorithm"),
        pytest.param("gymnasium:Env", ENV, id="env"),
    ],
)
def test_a_base_class_of_the_role_is_refused_at_validate_and_as_it_is_loaded(tmp_path, ref, role):
    with pytest.raises(SpecError, match="is a base class, whose methods a subclass must write"):
        check(ref, role, user_path(tmp_path), "run")
    loaded = CodeRef(ref, role, user_path(tmp_path), "run", local=False, declared=False)
    with pytest.raises(SpecError, match="is a base class"):
        loaded.load()


@pytest.mark.parametrize(
    ("config", "path", "expected"),
    [
        pytest.param(
            "{callbacks: os.abort}",
            "e.config.callbacks",
            "write os:abort",
            id="dotted-callbacks",
        ),
        pytest.param(
            "{callbacks: 'os:abort'}",
            "e.config.callbacks",
            "is part of Python",
            id="stdlib-callbacks",
        ),
        pytest.param(
            "{callbacks: 'rllib_code:mapping'}",
            "e.config.callbacks",
            "is a function, not an RLlib callbacks class",
            id="function-as-callbacks",
        ),
        pytest.param(
            "{callbacks: ['rllib_code:MarkResults', 'rllib_code:MarkResult']}",
            "e.config.callbacks[1]",
            "did you mean 'MarkResults'",
            id="a-list-member",
        ),
        pytest.param(
            "{policy_mapping_fn: 'mlflow.utils.process:_exec_cmd'}",
            "e.config.policy_mapping_fn",
            INSTALLED_FUNCTION,
            id="installed-mapping-function",
        ),
        pytest.param(
            "{env_to_module_connector: MeanStdFilter}",
            "e.config.env_to_module_connector",
            "not a reference to code",
            id="connector-as-text",
        ),
        pytest.param(
            "{evaluation_config: {callbacks: subprocess.Popen}}",
            "e.config.evaluation_config.callbacks",
            "write subprocess:Popen",
            id="inside-evaluation-config",
        ),
        pytest.param(
            "{callbacks: {grid_search: ['rllib_code:MarkResults']}}",
            "e.config.callbacks",
            "code cannot be searched",
            id="searched",
        ),
        pytest.param(
            "{callbacks_on_episode_end: 'rllib_code:on_episode_nd'}",
            "e.config.callbacks_on_episode_end",
            "did you mean 'on_episode_end'",
            id="misspelt-event-function",
        ),
        pytest.param(
            "{env_to_module_connector: '__main__:flatten'}",
            "e.config.env_to_module_connector",
            "write env_to_module_connector: flatten:flatten",
            id="main-module",
        ),
    ],
)
def test_rllib_code_keys_take_only_module_name_through_the_gate(
    cli, write_spec, tmp_path, config, path, expected
):
    user_module("rllib_code.py", tmp_path)
    spec = write_spec(f"e:\n  run: PPO\n  env: CartPole-v1\n  config: {config}\n")
    refused(cli("validate", spec), f"{path}:", expected)


def test_a_replay_buffer_type_is_rllibs_own_name_or_code(cli, write_spec, tmp_path):
    base = "e:\n  run: DQN\n  env: CartPole-v1\n  config: {replay_buffer_config: {type: %s}}\n"
    assert cli("validate", write_spec(base % "EpisodeReplayBuffer")).code == 0
    refused(cli("validate", write_spec(base % "os.system")), "e.config.replay_buffer_config.type")


def test_rllib_code_is_loaded_as_objects_for_the_trial(tmp_path):
    from ray.rllib.callbacks.callbacks import RLlibCallback

    from tune_app.rllib.code import load_code, without_code

    user_module("rllib_code.py", tmp_path)
    config = {
        "lr": 0.1,
        "callbacks": "rllib_code:MarkResults",
        "callbacks_on_episode_end": ["rllib_code:on_episode_end"],
        "evaluation_config": {"policy_mapping_fn": "rllib_code:mapping"},
        "replay_buffer_config": {"type": "EpisodeReplayBuffer", "capacity": 10},
    }
    loaded = load_code(config, user_path(tmp_path))
    assert issubclass(loaded["callbacks"], RLlibCallback) and loaded["lr"] == 0.1
    assert loaded["callbacks_on_episode_end"][0].__name__ == "on_episode_end"
    assert loaded["evaluation_config"]["policy_mapping_fn"]("a", None) == "p0"
    assert loaded["replay_buffer_config"]["type"] == "EpisodeReplayBuffer"
    assert config["callbacks"] == "rllib_code:MarkResults"  # the spec's config is not changed
    stripped = without_code(config)
    assert "callbacks" not in stripped and "policy_mapping_fn" not in stripped["evaluation_config"]


@pytest.mark.parametrize(
    ("key", "ref", "cls"),
    [
        # RLlib spells FlattenObservations as a functools.partial of the common class: the
        # reported case named it 'functools.FlattenObservations'.
        pytest.param(
            "env_to_module_connector",
            "ray.rllib.connectors.env_to_module:FlattenObservations",
            "ray.rllib.connectors.common.flatten_observations:FlattenObservations",
            id="rllib-partial",
        ),
        pytest.param(
            "env_to_module_connector",
            "ray.rllib.connectors.env_to_module:MeanStdFilter",
            "ray.rllib.connectors.env_to_module.mean_std_filter:MeanStdFilter",
            id="rllib-class",
        ),
        pytest.param(
            "env_to_module_connector",
            "ray.rllib.connectors.env_to_module.prev_actions_prev_rewards:PrevActionsPrevRewards",
            "ray.rllib.connectors.env_to_module.prev_actions_prev_rewards:PrevActionsPrevRewards",
            id="rllib-submodule",
        ),
        pytest.param(
            "env_to_module_connector",
            "rllib_code:PassObservations",
            "rllib_code:PassObservations",
            id="own-class",
        ),
    ],
)
def test_a_connector_class_at_an_env_runners_key_is_made_on_each_env_runner(
    cli, write_spec, tmp_path, key, ref, cls
):
    """RLlib calls these keys' value with (env, spaces, device): a class is made per env runner
    with no arguments, as RLlib's examples' `lambda env, spaces, device: FlattenObservations()`;
    on a multi-agent env, per agent where the class takes `multi_agent`."""
    import importlib
    import inspect

    import gymnasium as gym

    from tune_app.envs import resolve_env
    from tune_app.rllib.code import load_code

    user_module("rllib_code.py", tmp_path)
    spec = write_spec(f"e:\n  run: PPO\n  env: CartPole-v1\n  config: {{{key}: '{ref}'}}\n")
    assert cli("validate", spec).code == 0
    builder = load_code({key: ref}, user_path(tmp_path))[key]
    module, _, name = cls.partition(":")
    expected = getattr(importlib.import_module(module), name)
    piece = builder(gym.make_vec("CartPole-v1", num_envs=2), None, None)
    assert type(piece) is expected
    if "multi_agent" in inspect.signature(expected).parameters:
        user_module("two_cartpoles.py", tmp_path)
        env = resolve_env("two_cartpoles:TwoCartPoles", tmp_path).load()()
        assert builder(env)._multi_agent and not piece._multi_agent


def test_rllib_builds_its_pipeline_with_the_connector_class_a_spec_names(tmp_path):
    """The reported case end to end in RLlib's own builder: FrozenLake's Discrete observations
    reach the module flattened (one-hot), as FlattenObservations does."""
    import gymnasium as gym
    from ray.rllib.algorithms.ppo import PPOConfig

    from tune_app.rllib.code import load_code
    from tune_app.rllib.config import to_rllib

    ref = {"env_to_module_connector": "ray.rllib.connectors.env_to_module:FlattenObservations"}
    config = to_rllib(load_code(ref, user_path(tmp_path)))
    algorithm = PPOConfig().environment("FrozenLake-v1").update_from_dict(config)
    pipeline = algorithm.build_env_to_module_connector(env=gym.make_vec("FrozenLake-v1", 2))
    assert pipeline.observation_space.shape == (16,)


@pytest.mark.parametrize(
    ("key", "ref", "needed"),
    [
        pytest.param(
            "env_to_module_connector",
            "ray.rllib.connectors.env_to_module:AgentToModuleMapping",
            "rl_module_specs, agent_to_module_mapping_fn",
            id="rllib-class",
        ),
        pytest.param(
            "module_to_env_connector",
            "ray.rllib.connectors.module_to_env:NormalizeAndClipActions",
            "normalize_actions, clip_actions",
            id="rllib-module-to-env",
        ),
        pytest.param(
            "env_to_module_connector", "rllib_code:ScaledObservations", "scale", id="own-class"
        ),
    ],
)
def test_a_connector_class_that_needs_arguments_is_refused_with_the_function_to_write(
    tmp_path, key, ref, needed
):
    from tune_app.rllib.code import load_code

    user_module("rllib_code.py", tmp_path)
    with pytest.raises(SpecError) as err:
        load_code({key: ref}, user_path(tmp_path))
    message = str(err.value)
    assert message.startswith(f"config.{key}: connector class") and f"needs {needed}" in message
    assert "def make(env, spaces, device)" in message


def test_a_connector_refused_as_it_is_loaded_names_the_file_and_experiment(
    ray_session, cli, write_spec, tmp_path
):
    """The config's code is imported as the experiment is loaded: a refusal then is one line
    with the spec file and the experiment's key path, before anything is written."""
    spec_file = write_spec(
        "e:\n  run: PPO\n  env: CartPole-v1\n  stop: {training_iteration: 1}\n  config:\n"
        "    env_to_module_connector: ray.rllib.connectors.env_to_module:AgentToModuleMapping\n"
    )
    out = tmp_path / "o"
    result = cli("run", spec_file, "--smoke", "--storage-path", out, "-q")
    line = refused(result, "def make(env, spaces, device)", file=spec_file)
    assert line.startswith(
        f"error: {spec_file}: e.config.env_to_module_connector: connector class "
        "AgentToModuleMapping needs"
    ), line
    assert not out.exists()


@pytest.mark.e2e  # RLlib trains end to end; the first tier keeps test_ppo_runs_through_the_cli
def test_rllib_calls_the_callbacks_class_a_spec_names(ray_session, cli, write_spec, tmp_path):

    user_module("rllib_code.py", tmp_path)
    spec = write_spec(
        "e:\n  run: PPO\n  env: CartPole-v1\n  stop: {training_iteration: 2}\n"
        "  config: {callbacks: 'rllib_code:MarkResults'}\n"
    )
    result = cli("run", spec, "--smoke", "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    rows = results_of(next((tmp_path / "o").rglob("results.jsonl")).parent)
    assert rows and all(row.get("callbacks_mark") == 1 for row in rows)


@pytest.mark.parametrize(
    ("source", "line", "replacement"),
    [
        pytest.param(
            "from ray import tune\n\n\ndef train(config):\n"
            "    with tune.checkpoint_dir(step=1) as d:\n        pass\n",
            5,
            "tune.get_checkpoint()",
            id="checkpoint-dir",
        ),
        pytest.param(
            "import ray.tune as t\n\n\ndef train(config):\n    print(t.get_trial_dir())\n",
            5,
            "get_context().get_trial_dir()",
            id="aliased-trial-dir",
        ),
        pytest.param(
            "from ray.tune import track\n\n\ndef train(config):\n    track.log(x=1)\n",
            1,
            "tune.report",
            id="imported-track",
        ),
    ],
)
def test_ray_1_session_functions_are_named_with_their_line_before_ray_starts(
    cli, write_spec, tmp_path, source, line, replacement
):
    (tmp_path / "old_api.py").write_text(source)
    result = cli("validate", write_spec("e:\n  run: old_api:train\n"))
    refused(result, f"e.run: old_api.py:{line} uses tune.", replacement)


def test_todays_tune_api_is_not_mistaken_for_a_removed_one(cli, write_spec, tmp_path):
    (tmp_path / "new_api.py").write_text(
        "from ray import tune\n\n\ndef train(config):\n"
        "    tune.report({'x': 1}, checkpoint=tune.get_checkpoint())\n"
    )
    assert cli("validate", write_spec("e:\n  run: new_api:train\n")).code == 0


@pytest.mark.parametrize(
    "init",
    [
        pytest.param("open(MARK, 'w').write('ran')\n", id="writes"),
        pytest.param("open(MARK, 'w').write('ran')\nimport sys\nsys.exit(0)\n", id="exits-0"),
    ],
)
def test_validate_runs_no_package_init_of_a_dotted_module(cli, write_spec, tmp_path, init):
    """`run: evilpkg.mod:f` imported `evilpkg` to find `mod`: its `__init__` ran at validate
    (a file written; with sys.exit(0), a silent pass with no plan printed). The same under a
    namespace package (a folder without `__init__.py`)."""
    mark = tmp_path / "ran"
    for package in (tmp_path / "evilpkg", tmp_path / "ns" / "sub"):
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"MARK = {str(mark)!r}\n" + init)
        (package / "mod.py").write_text("def f(config):\n    pass\n")
    for ref in ("evilpkg.mod:f", "ns.sub.mod:f"):
        result = cli("validate", write_spec(f"e:\n  run: {ref}\n"))
        assert result.code == 0 and ref in result.out and "trials" in result.out, result
        assert not mark.exists(), ref
    missing = cli("validate", write_spec("e:\n  run: evilpkg.nope:f\n"))
    refused(missing, "module 'evilpkg.nope' cannot be found")
    assert not mark.exists()


def test_a_folder_without_init_inside_a_package_is_found_without_importing_it(
    cli, write_spec, tmp_path
):
    """`run: pkg.sub.mod:f` where `sub` has no `__init__.py` and `pkg` has one: Python's path
    finder looks a namespace package's parent up among the imported modules, which the static
    walk never imports, and validate crashed with KeyError: 'pkg' (exit 1)."""
    mark = tmp_path / "ran"
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("def f(config):\n    pass\n")
    result = cli("validate", write_spec("e:\n  run: pkg.sub.mod:f\n"))
    assert result.code == 0 and "pkg.sub.mod:f" in result.out, result
    assert not mark.exists()
    refused(cli("validate", write_spec("e:\n  run: pkg.sub.nope:f\n")), "cannot be found")
