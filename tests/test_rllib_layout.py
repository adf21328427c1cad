"""The sampling layout the app chooses for RLlib trials: per algorithm family, for the trials that
run at once, never over a value the spec wrote; said in one line, kept in run.json, exported by
`best`. Ray-free."""

from __future__ import annotations

import json
import math

import pytest

from tune_app import spec
from tune_app.errors import SpecError
from tune_app.plan.describe import layout_lines
from tune_app.plan.make import make_plan
from tune_app.readback.best import best_spec
from tune_app.resources import amounts
from tune_app.rundir.records import RunRecord
from tune_app.rundir.write import Invocation, write_run_files
from tune_app.space import Domain


def plan_of(write_spec, text, cpus=2):
    return make_plan(spec.load(write_spec(text)), cpus=cpus)


def exp_text(run, extra="", env="CartPole-v1"):
    return f"e:\n  run: {run}\n  env: {env}\n{extra}"


# (spec, CPUs, config keys the app sets, the printed line's words)
CHOICES = [
    pytest.param(
        exp_text("PPO", "  num_samples: 4\n"),
        2,
        {"num_env_runners": 0, "num_envs_per_env_runner": 8},
        "sampling in the trial process, 8 envs; 2 trials at once (no env-runner process",
        id="ppo-many-trials",
    ),
    pytest.param(
        exp_text("PPO"),
        2,
        {"num_env_runners": 0, "num_envs_per_env_runner": 8},
        "8 envs; 1 trial at once",
        id="ppo-one-trial-2-cpus",
    ),
    pytest.param(
        exp_text("PPO"),
        16,
        {"num_envs_per_env_runner": 4},  # RLlib's 2 runners kept: each samples 4 of 8 envs
        "2 env runners x 4 envs; 1 trial at once (runners sample in parallel",
        id="ppo-one-trial-16-cpus",
    ),
    pytest.param(
        exp_text("PPO", "  num_samples: 8\n  max_concurrent_trials: 1\n"),
        2,
        {"num_env_runners": 0, "num_envs_per_env_runner": 8},
        "1 trial at once",
        id="ppo-one-at-a-time",
    ),
    pytest.param(
        exp_text("PPO", "  config: {num_workers: 0, num_envs_per_worker: 1}\n"),
        2,
        {},
        "sampling in the trial process, 1 env; 1 trial at once (PPO samples, then trains; "
        "num_env_runners, num_envs_per_env_runner as written)",  # no count of the app's 8
        id="ppo-all-written",
    ),
    pytest.param(
        exp_text(
            "PPO",
            "  num_samples: 2\n"
            "  config: {num_workers: 0, rollout_fragment_length: 200, train_batch_size: 800}\n",
        ),
        2,
        {"num_envs_per_env_runner": 4},  # 8 envs x 200 steps: 1,600, which RLlib refuses
        "sampling in the trial process, 4 envs; 2 trials at once (PPO samples, then trains; "
        "fewer envs for rollout_fragment_length as written",
        id="ppo-fragment-written",
    ),
    pytest.param(
        exp_text("APPO", "  num_samples: 4\n"),
        2,
        {"num_env_runners": 1, "num_learners": 0},
        "1 env runner x 1 env; 1 trial at once (env runners sample while APPO learns)",
        id="appo-keeps-a-runner",
    ),
    pytest.param(
        exp_text("APPO", "  config: {num_workers: 1}\n"),
        2,
        {"num_learners": 0},  # the written runner keeps its CPU: the main process trains
        "1 env runner x 1 env; 1 trial at once (env runners sample while APPO learns; "
        "num_env_runners as written)",
        id="appo-written-runner",
    ),
    pytest.param(
        exp_text("IMPALA", "  config: {num_env_runners: 1}\n"),
        2,
        {"num_learners": 0},
        "1 env runner x 1 env; 1 trial at once",
        id="impala-written-runner",
    ),
    pytest.param(
        exp_text("IMPALA", "  num_samples: 2\n"),
        16,
        {},  # 2 runners + learner + main fit 8 CPUs: RLlib's own
        "2 env runners x 1 env; 2 trials at once",
        id="impala-room-for-defaults",
    ),
    pytest.param(
        exp_text("DQN", "  num_samples: 4\n"),
        2,
        {},  # RLlib's 0 runners and 1 env: the only layout that keeps updates per env step
        "sampling in the trial process, 1 env; 2 trials at once (DQN learns as RLlib's defaults",
        id="dqn-keeps-what-it-learns",
    ),
    pytest.param(
        exp_text("SAC", "  num_samples: 3\n", env="Pendulum-v1"),
        16,
        {},
        "1 env; 3 trials at once (SAC learns as RLlib's defaults",
        id="sac-keeps-what-it-learns",
    ),
    pytest.param(
        exp_text("PPO", "  num_samples: 4\n  layout: rllib\n"),
        16,
        {},
        "2 env runners x 1 env; 4 trials at once (layout: rllib keeps RLlib's defaults)",
        id="layout-rllib",
    ),
    pytest.param(
        "layout: rllib\nexperiments:\n  e: {run: PPO, env: CartPole-v1}\n",
        16,
        {},
        "(layout: rllib keeps RLlib's defaults)",
        id="layout-rllib-file-level",
    ),
    pytest.param(
        "layout: rllib\nexperiments:\n  e: {run: PPO, env: CartPole-v1, layout: app}\n",
        2,
        {"num_env_runners": 0, "num_envs_per_env_runner": 8},
        "(no env-runner process: PPO trains between samples)",
        id="experiment-overrides-file",
    ),
]


@pytest.mark.parametrize(("text", "cpus", "chosen", "words"), CHOICES)
def test_the_layout_for_each_family_and_search(write_spec, text, cpus, chosen, words):
    (ep,) = plan_of(write_spec, text, cpus).experiments
    assert ep.layout is not None and ep.layout.chosen == chosen
    for key, value in chosen.items():
        assert ep.experiment.config[key] == value
    assert ep.trial_cpus <= cpus
    assert words in ep.layout.line and ep.layout.line.startswith(f"{ep.experiment.run} layout: ")


# (config as written, the keys it keeps, what the app still sets)
WRITTEN = [
    pytest.param("{num_env_runners: 1}", {"num_env_runners": 1}, {"num_envs_per_env_runner": 8}),
    pytest.param("{num_workers: 1}", {"num_env_runners": 1}, {"num_envs_per_env_runner": 8}),
    pytest.param(
        "{num_rollout_workers: 0}", {"num_env_runners": 0}, {"num_envs_per_env_runner": 8}
    ),
    pytest.param(
        "{num_envs_per_worker: 2}", {"num_envs_per_env_runner": 2}, {"num_env_runners": 0}
    ),
    pytest.param(
        "{num_envs_per_env_runner: {grid_search: [1, 4]}}",
        {"num_envs_per_env_runner": Domain("grid_search", (1, 4))},
        {"num_env_runners": 0},
        id="searched",
    ),
    pytest.param(
        "{num_env_runners: 0, num_envs_per_env_runner: 1}",
        {"num_env_runners": 0, "num_envs_per_env_runner": 1},
        {},
        id="both",
    ),
]


@pytest.mark.parametrize(("config", "kept", "chosen"), WRITTEN)
def test_a_value_the_spec_wrote_is_never_changed(write_spec, config, kept, chosen):
    (ep,) = plan_of(write_spec, exp_text("PPO", f"  config: {config}\n")).experiments
    assert ep.layout.chosen == chosen
    for key, value in kept.items():
        assert ep.experiment.config[key] == value
    assert "as written" in ep.layout.line


def test_simulations_are_written_runners(write_spec):
    (ep,) = plan_of(write_spec, exp_text("PPO", "  simulations: 1\n")).experiments
    assert ep.experiment.config["num_env_runners"] == 1
    assert ep.layout.chosen == {"num_envs_per_env_runner": 8}


def test_a_cluster_not_yet_joined_keeps_rllib_defaults(write_spec):
    (ep,) = plan_of(write_spec, exp_text("PPO"), cpus=math.inf).experiments
    assert ep.layout.chosen == {} and "known once joined" in ep.layout.line


def test_experiments_that_run_together_share_the_machine(write_spec):
    """Alone on 16 CPUs, one PPO trial keeps RLlib's 2 runners (3 CPUs); beside an experiment
    of 7 trials, which runs at the same time, it plans for its part: 2 CPUs, no runner."""
    one = "  one: {run: PPO, env: CartPole-v1}\n"
    (alone,) = plan_of(write_spec, f"experiments:\n{one}", cpus=16).experiments
    assert alone.layout.chosen == {"num_envs_per_env_runner": 4}
    many = "  many: {run: my_func, num_samples: 7, config: {alpha: 1.0, beta: 1.0}}\n"
    plan = plan_of(write_spec, f"experiments:\n{one}{many}", cpus=16)
    beside = plan.experiments[0]
    assert beside.layout.chosen == {"num_env_runners": 0, "num_envs_per_env_runner": 8}
    assert "1 trial at once" in beside.layout.line


@pytest.mark.parametrize(
    ("text", "smoke", "says"),
    [
        pytest.param(
            "experiments:\n"
            + "".join(
                f"  {n}: {{run: PPO, env: CartPole-v1, num_samples: 4, "
                "config: {num_env_runners: 2}}\n"
                for n in "ab"
            ),
            False,
            "2 env runners x 4 envs; 4 trials at once",  # each alone: Tune holds it to no part
            id="two-experiments-share-the-machine",
        ),
        pytest.param(
            exp_text("PPO", "  num_samples: 4\n"),
            True,
            "1 env runner x 4 envs; 2 trials at once",
            id="smoke-runs-one-runner-and-two-trials",
        ),
    ],
)
def test_the_layout_line_and_the_bundles_line_say_one_count(write_spec, text, smoke, says):
    """Beside another experiment, the bundles line counted trials at once on the whole machine
    (4 of 3 CPUs on 16) where the layout line counted its part (2), a split Tune does not keep;
    under --smoke the layout line said the search as written (2 runners, 4 trials at once) where
    --smoke runs 1 runner and 2 trials."""
    from tune_app.cli.console import plan_text

    plan = make_plan(spec.load(write_spec(text)), cpus=16, smoke=smoke)
    text = plan_text(plan)
    for ep in plan.experiments:
        assert says in ep.layout.line, ep.layout.line
        count = says.rpartition("; ")[2]
        bundles = f"{amounts(ep.bundles)} per trial = {ep.trial_cpus:g} CPUs; {count}"
        assert bundles in text, text


def test_other_kinds_choose_no_layout(write_spec):
    plan = plan_of(write_spec, "e:\n  run: my_func\n  config: {alpha: 1.0, beta: 1.0}\n")
    assert plan.experiments[0].layout is None and layout_lines(plan) == []


def test_validate_prints_one_line_per_experiment(write_spec, cli):
    path = write_spec(
        "experiments:\n  p: {run: PPO, env: CartPole-v1, num_samples: 4}\n"
        "  d: {run: DQN, env: CartPole-v1, num_samples: 2}\n"
    )
    out = cli("validate", str(path), "--cpus", "2").out.splitlines()
    # The two run at the same time, each laid out on its part of the 2 CPUs; each runs 2 at once
    # alone: Tune places both experiments' trials as CPUs free up.
    shared = "and Tune places both experiments' trials as CPUs free up"
    assert out[:2] == [
        "p: PPO layout: sampling in the trial process, 8 envs; 2 trials at once (no env-runner "
        f"process: PPO trains between samples); that many alone: d takes CPUs too, {shared}",
        "d: DQN layout: sampling in the trial process, 1 env; 2 trials at once (DQN learns as "
        "RLlib's defaults do: updates per env step, replay ratio and n-step unchanged); that "
        f"many alone: p takes CPUs too, {shared}",
    ]


@pytest.mark.parametrize(
    ("extra", "where", "advice"),
    [
        pytest.param(
            "  layout: rllib\n",
            "e.config.num_env_runners",
            "set num_env_runners: 1 to fit; the fastest layout that fits: num_env_runners: 0, "
            "num_envs_per_env_runner: 8 (no env-runner process",
            id="ppo-rllib-defaults",
        ),
        pytest.param(
            "  config: {num_workers: 4}\n",
            "e.config.num_workers",
            "set num_workers: 1 to fit; the fastest layout that fits: num_env_runners: 0, "
            "num_envs_per_env_runner: 8",
            id="ppo-legacy-written",
        ),
    ],
)
def test_the_fit_advice_names_the_fastest_layout_that_fits(write_spec, extra, where, advice):
    with pytest.raises(SpecError) as caught:
        plan_of(write_spec, exp_text("PPO", extra))
    assert caught.value.path == where and advice in str(caught.value)


def test_dqn_advice_keeps_what_it_learns(write_spec):
    with pytest.raises(SpecError) as caught:
        plan_of(write_spec, exp_text("DQN", "  config: {num_env_runners: 3}\n"))
    assert "the fastest layout that fits: num_env_runners: 0 (DQN learns as" in str(caught.value)


PBT = "  scheduler: {type: pbt, hyperparam_mutations: {num_epochs: [1, 4]}}"


# (the experiment's keys, the two trials' configs as run, what `best` exports of the second)
@pytest.mark.parametrize(
    ("extra", "configs", "exported"),
    [
        pytest.param(
            "  num_samples: 2\n  config: {lr: {choice: [0.001, 0.01]}}\n",
            [{"lr": 0.001}, {"lr": 0.01}],
            {"lr": 0.01},
            id="searched",
        ),
        # A legacy RLlib key runs under its new name, and is exported under the name written.
        pytest.param(
            "  config: {num_sgd_iter: {grid_search: [1, 2]}}\n",
            [{"num_epochs": 1}, {"num_epochs": 2}],
            {"num_sgd_iter": 2},
            id="legacy-key",
        ),
        pytest.param(
            "  num_samples: 2\n  config: {model: {fcnet_hiddens: {choice: [[16], [64, 64]]}}}\n",
            [{"model_config": {"fcnet_hiddens": h}} for h in ([16], [64, 64])],
            {"model": {"fcnet_hiddens": [64, 64]}},
            id="legacy-model-key",
        ),
        pytest.param(
            f"  num_samples: 2\n  config: {{num_sgd_iter: 2}}\n{PBT}\n",
            [{"num_epochs": 1}, {"num_epochs": 4}],
            {"num_sgd_iter": 4},
            id="legacy-key-mutated",
        ),
    ],
)
def test_run_json_records_the_layout_and_best_exports_it(
    write_spec, tmp_path, extra, configs, exported
):
    text = exp_text("PPO", extra)
    plan = make_plan(spec.load(write_spec(text)), cpus=2, storage_path=str(tmp_path / "out"))
    (ep,) = plan.experiments
    folder = ep.folder.local
    folder.mkdir(parents=True)
    write_run_files(ep, plan, Invocation.here(["run", "spec.yaml"], plan.spec.file))
    record = RunRecord.from_json(json.loads(ep.folder.record.read_text()))
    assert record.layout == {"num_env_runners": 0, "num_envs_per_env_runner": 8}
    assert record.layout_line == ep.layout.line
    rows = [
        {"trial_id": t, "training_iteration": 1, "config": config}
        | {"env_runners": {"episode_return_mean_smoothed": score}}
        for t, config, score in zip("ab", configs, (20.0, 30.0), strict=True)
    ]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = [{"trial_id": t, "status": "TERMINATED"} for t in "ab"]
    (folder / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in done))
    out, _ = best_spec(folder)
    config = out["e-best"]["config"]
    assert config == exported | {"num_env_runners": 0, "num_envs_per_env_runner": 8}
    # The exported single trial keeps the search's layout as written values.
    (again,) = make_plan(spec.parse(out, tmp_path / "best.yaml"), cpus=2).experiments
    assert again.layout.chosen == {} and again.experiment.config["num_envs_per_env_runner"] == 8


def test_an_older_run_json_reads_without_a_layout():
    record = RunRecord.from_json({"experiment": "e", "trials": 2})
    assert record.layout == {} and record.layout_line == ""


def test_run_prints_the_layout_once_planned_unless_quiet(write_spec, capsys):
    from tune_app.cli.printing import print_plan_start

    plan = plan_of(write_spec, exp_text("PPO", "  num_samples: 4\n"))
    print_plan_start(plan)
    said, layout = capsys.readouterr().out.splitlines()
    assert (
        said.startswith("tune_app: results in ")
        and layout == f"e: {plan.experiments[0].layout.line}"
    )
