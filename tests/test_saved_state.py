"""What Tune's saved state names of the app, and what `resume` does with a state it cannot read.

Tune pickles the objects the app hands it (callbacks, stopper, searcher, scheduler, config
values), and a resume unpickles them by module and name: a run interrupted under one release
resumed under a later one only while each name still imported ("Can't get attribute
'_summary_writer' on <module 'tune_app.tensorboard'>"). Runs of each kind of search are walked
here opcode by opcode: every name of the app they hold is in `saved_state.PICKLED_NAMES`, none
private, and no code of the app is frozen into them by value.
"""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from tests.conftest import BOHB_RANGES, refused, user_module
from tune_app import saved_state, spec
from tune_app.plan.make import make_plan
from tune_app.rundir.layout import TUNER_STATE
from tune_app.rundir.saved import tune_pickles
from tune_app.rundir.write import Invocation, write_run_files
from tune_app.saved_state import PICKLED_NAMES, by_value, is_private, pickled_globals, resolves
from tune_app.space import Domain
from tune_app.tuner import SpecStopper


def test_every_name_the_saved_state_may_hold_imports_and_is_public():
    assert [n for n in sorted(PICKLED_NAMES) if not resolves(n)] == []
    assert [n for n in sorted(PICKLED_NAMES) if is_private(n)] == []


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_the_globals_of_a_pickle_are_read_in_every_protocol(protocol):
    # The second of each is fetched from the memo, as are the module strings under protocol 4.
    data = pickle.dumps([SpecStopper, Domain, SpecStopper, Domain], protocol=protocol)
    assert list(pickled_globals(data)) == ["tune_app.tuner:SpecStopper", "tune_app.space:Domain"]


@pytest.mark.parametrize(
    "name, private",
    [
        pytest.param("tune_app.tensorboard:_summary_writer", True, id="private-name"),
        pytest.param("tune_app._internal:Thing", True, id="private-module"),
        pytest.param("tune_app.rllib.algorithm:app_algorithm.<locals>.step", True, id="local"),
        pytest.param("tune_app.tensorboard:TrialBoard", False, id="public"),
    ],
)
def test_a_name_is_private_if_any_part_is(name, private):
    assert is_private(name) is private


# ---- runs of each kind: what Tune pickled ---------------------------------------------------

KINDS = [
    pytest.param(
        "my_trainables.py",
        """
metric: score
mode: max
seed: 1
search: optuna
scheduler: {type: asha, max_t: 3, grace_period: 1}
experiments:
  e:
    run: my_trainables:train
    num_samples: 2
    seeds: 2
    result_timeout_s: 60
    stop: {training_iteration: 3}
    config: {x: {uniform: [0, 1]}}
""",
        id="function-optuna-asha-seeds-timeout",
    ),
    pytest.param(
        "class_trainables.py",
        """
metric: score
mode: max
experiments:
  e:
    run: class_trainables:Counter
    seeds: 2
    stop: {training_iteration: 2}
    checkpoint_config: {checkpoint_frequency: 1}
    tensorboard: {include: [time_this_iter_s]}
    config: {a: {grid_search: [1, 2]}}
""",
        id="class-grid-seeds-checkpoints-tensorboard",
    ),
    pytest.param(
        "my_trainables.py",
        """
metric: score
mode: max
seed: 1
search: {type: hyperopt, n_initial_points: 2}
scheduler: median
trackers:
  mlflow: {tracking_uri: "sqlite:///mlflow.db"}
  wandb: {mode: offline, project: p, dir: wandb}
experiments:
  e:
    run: my_trainables:train
    num_samples: 2
    seeds: 2
    config: {x: {uniform: [0, 1]}, steps: 2}
""",
        id="function-hyperopt-median-seeds-trackers",
        marks=pytest.mark.slow,  # the first tier runs two kinds; the second, every kind
    ),
    pytest.param(
        "two_objectives.py",
        """
metric: [accuracy, mem_mb]
mode: [max, min]
seed: 3
search: {type: optuna, sampler: nsga2}
experiments:
  e:
    run: two_objectives:train
    num_samples: 2
    constraints: {mem_mb: {max: 2500}}
    config: {width: {uniform: [0, 1]}}
""",
        id="two-objectives-constraints",
        marks=pytest.mark.slow,  # the first tier runs two kinds; the second, every kind
    ),
    pytest.param(
        "my_trainables.py",
        """
metric: score
mode: max
seed: 2
search: random
scheduler: {type: hyperband, max_t: 2}
experiments:
  e:
    run: my_trainables:train
    num_samples: 2
    seeds: 2
    config: {x: {uniform: [0, 1]}, steps: 2}
""",
        id="hyperband-seeds",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "my_trainables.py",
        """
metric: score
mode: max
seed: 7
search: bohb
scheduler: {type: hyperband, max_t: 2}
experiments:
  e:
    run: my_trainables:train
    num_samples: 2
    config: {x: {uniform: [0, 1]}, steps: 2}
""",
        id="bohb",
        marks=[BOHB_RANGES, pytest.mark.slow],
    ),
    pytest.param(
        "pbt_climb.py",
        """
metric: value
mode: max
seed: 0
scheduler: {type: pbt, perturbation_interval: 1, hyperparam_mutations: {lr: {uniform: [0.1, 1]}}}
experiments:
  e:
    run: pbt_climb:train
    num_samples: 2
    stop: {training_iteration: 2}
    config: {lr: {uniform: [0.1, 1]}}
""",
        id="pbt",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        None,
        """
metric: env_runners/episode_return_mean
mode: max
experiments:
  e:
    run: PPO
    env: CartPole-v1
    stop: {training_iteration: 1}
    config: {train_batch_size: 128, minibatch_size: 64, num_epochs: 1, num_env_runners: 0}
""",
        id="rllib-ppo",
        marks=[
            pytest.mark.e2e,  # RLlib trains end to end
            pytest.mark.xfail(
                strict=True,
                reason="RLlib's checkpoint pickles type(self): in a trial that is the class Ray "
                "makes of the trial's class for its actor (the same module and name, another "
                "object), so cloudpickle writes it by value with the app's class under it. "
                "Tune's own state names the class (tune_app.rllib.algorithm:PPO)",
            ),
        ],
    ),
]


@pytest.mark.parametrize("module, text", KINDS)
def test_tunes_saved_state_names_only_the_apps_stable_names(
    ray_session, cli, tmp_path, monkeypatch, module, text
):
    if module:
        user_module(module, tmp_path)
    monkeypatch.chdir(tmp_path)  # the trackers' files
    (tmp_path / "spec.yaml").write_text(text)
    result = cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    folder = tmp_path / "o" / "e"
    wrong, held = [], set()
    for where, data in tune_pickles(folder, trials=True):
        for name in pickled_globals(data):
            if name.startswith("tune_app"):
                held.add(name)
                if is_private(name) or name not in PICKLED_NAMES:
                    wrong.append(f"{where}: {name}")
        wrong += [
            f"{where}: code of {m} by value" for m in by_value(data) if m.startswith("tune_app")
        ]
    assert held, "Tune's saved state holds the app's callbacks"
    assert wrong == []
    names = saved_state.saved_names(folder)
    assert saved_state.missing_name(names) is None  # and resume reads it
    assert saved_state.foreign_name(names, (str(tmp_path),)) is None


# ---- a state this release cannot read --------------------------------------------------------

THIS = f"tune_app {saved_state.tune_app.__version__} (code {saved_state.app_fingerprint()})"


@pytest.mark.parametrize(
    "named, recorded, line",
    [
        pytest.param(
            "tune_app.tensorboard:_summary_writer",
            {"versions": {"tune_app": "0.0.9", "ray": "2.55.0"}, "app_code": "0123456789abcdef"},
            "{folder} was saved by tune_app 0.0.9 (code 0123456789abcdef); this {this} cannot "
            "read its saved search state, which names tune_app.tensorboard:_summary_writer; its "
            "results read as they are (analyze, report, best); to continue the search, resume it "
            "with tune_app 0.0.9 (code 0123456789abcdef) installed, or start a new run",
            id="app-name-gone",
        ),
        pytest.param(
            "tune_app.gone:Thing",
            {"versions": {}, "app_code": ""},
            "{folder} was saved by a tune_app release its run.json does not name; this {this} "
            "cannot read its saved search state, which names tune_app.gone:Thing; its results "
            "read as they are (analyze, report, best); to continue the search, resume it with "
            "the release that ran it installed, or start a new run",
            id="app-module-gone-release-unrecorded",
        ),
        pytest.param(
            "ray.tune.gone:Thing",
            {"versions": {"tune_app": "0.1.0", "ray": "2.55.0"}, "app_code": "0123456789abcdef"},
            "{folder} was saved by tune_app 0.1.0 (code 0123456789abcdef) with ray 2.55.0; this "
            "ray {ray} cannot read its saved search state, which names ray.tune.gone:Thing; its "
            "results read as they are (analyze, report, best); to continue the search, resume it "
            "with ray 2.55.0 installed, or start a new run",
            id="ray-name-gone",
        ),
    ],
)
def test_a_state_naming_what_this_release_lacks_is_refused_in_one_line(
    cli, write_spec, tmp_path, named, recorded, line
):
    """Before Ray starts, exit 2 and one line naming the release that saved the run; nothing
    written. The pickle is protocol 0 (`c` is GLOBAL): no release of this one can make it."""
    from importlib import metadata

    ep = _saved_run(write_spec, tmp_path)
    record = json.loads(ep.folder.record.read_text())
    ep.folder.record.write_text(json.dumps({**record, **recorded}))
    module, _, name = named.partition(":")
    (ep.folder.local / TUNER_STATE).write_bytes(f"c{module}\n{name}\n.".encode())
    before = sorted(p.name for p in ep.folder.local.iterdir())

    result = cli("resume", ep.folder.local)

    expected = line.format(folder=ep.folder.where, this=THIS, ray=metadata.version("ray"))
    assert (result.code, result.err) == (2, f"error: {expected}\n")
    assert "Traceback" not in result.out + result.err
    assert sorted(p.name for p in ep.folder.local.iterdir()) == before


def _saved_run(write_spec, tmp_path):
    """A run folder of quadratic:train as `run` writes it before Tune starts."""
    user_module("quadratic.py", tmp_path)
    spec_file = write_spec("e:\n  run: quadratic:train\n  config: {x: 1}\n")
    plan = make_plan(spec.load(spec_file), cpus=2, storage_path=str(tmp_path / "o"))
    (ep,) = plan.experiments
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run", str(spec_file)], plan.spec.file))
    return ep


AGAIN = "resuming would start the search afresh and run every trial it ran again (1 finished)"
CUT = "Tune's saved tuner.pkl is cut short or no pickle: resuming cannot read back the search"


@pytest.mark.parametrize(
    "tuner, state, words",
    [
        pytest.param(None, None, ("experiment_state-*.json is missing", AGAIN), id="state-missing"),
        pytest.param(
            None, "{garbage", ("experiment_state-x.json cannot be read", AGAIN), id="state-torn"
        ),
        # Tune's restore raised "UnpicklingError: pickle data was truncated", exit 1.
        pytest.param(100, "{}", (CUT,), id="tuner-cut"),
        pytest.param(0, "{}", (CUT,), id="tuner-empty"),
    ],
)
def test_a_state_tune_cannot_read_back_whole_is_not_resumed(
    cli, write_spec, tmp_path, tuner, state, words
):
    """Tune starts a search afresh where it cannot read its newest experiment state: a resume
    exited 0 having run every finished trial again."""
    ep = _saved_run(write_spec, tmp_path)
    (ep.folder.local / TUNER_STATE).write_bytes(pickle.dumps({"stop": "x" * 200})[:tuner])
    if state is not None:
        (ep.folder.local / "experiment_state-x.json").write_text(state)
    ep.folder.results.write_text('{"trial_id": "a", "training_iteration": 1}\n')
    ep.folder.finished.write_text('{"trial_id": "a", "status": "TERMINATED"}\n')
    before = sorted(p.name for p in ep.folder.local.iterdir())
    where = ep.folder.where
    refused(cli("resume", where), f"{where}: ", *words, f"warm_start: [{where}]")
    assert sorted(p.name for p in ep.folder.local.iterdir()) == before


class _Calls:
    """Pickled, a call of `function` with `args` when unpickled."""

    def __init__(self, function, *args):
        self.call = function, args

    def __reduce__(self):
        return self.call


@pytest.mark.parametrize(
    "state, refused_name",
    [
        pytest.param(lambda p: _Calls(os.system, f"touch {p}"), "posix:system", id="os.system"),
        pytest.param(lambda p: _Calls(eval, f"open({str(p)!r}, 'w')"), "builtins:eval", id="eval"),
        pytest.param(lambda p: b"cnot_beside_the_spec\ntrain\n.", "not_beside_the_spec:train"),
        # What runs of the app pickle: the user's module, numbers, paths, exceptions, the app's
        pytest.param(lambda p: b"cquadratic\ntrain\n.", None, id="users-module"),
        pytest.param(lambda p: [{"a": np.arange(3)}, p, KeyError("x"), Domain], None, id="data"),
    ],
)
def test_a_saved_state_naming_what_no_run_puts_there_is_not_resumed(
    cli, write_spec, tmp_path, state, refused_name
):
    """A received folder's tuner.pkl calling os.system ran as `resume` read it: Tune unpickles
    the state, and unpickling calls what a pickle names."""
    ep = _saved_run(write_spec, tmp_path)
    sentinel, made = tmp_path / "ran", state(tmp_path / "ran")
    pickled = made if isinstance(made, bytes) else pickle.dumps(made)
    (ep.folder.local / TUNER_STATE).write_bytes(pickled)
    names = saved_state.saved_names(ep.folder.local)
    assert saved_state.foreign_name(names, (str(tmp_path),)) == refused_name
    if refused_name:
        refused(cli("resume", ep.folder.local), refused_name, "resume only a run folder you trust")
    assert not sentinel.exists()


def test_run_json_records_the_release_that_wrote_it(write_spec, tmp_path):
    user_module("quadratic.py", tmp_path)
    plan = make_plan(
        spec.load(write_spec("e:\n  run: quadratic:train\n")), cpus=2, storage_path=str(tmp_path)
    )
    (ep,) = plan.experiments
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run"], plan.spec.file))
    record = json.loads(ep.folder.record.read_text())
    assert record["versions"]["tune_app"] == saved_state.tune_app.__version__
    assert record["app_code"] == saved_state.app_fingerprint()
