"""The one count of what fits (`tune_app.resources`): trials at once from every resource of a
trial's bundles against each node, the refusal of a trial that can never run, and the plan, the
layout line and `validate --cpus/--gpus` that use it. Ray-free."""

from __future__ import annotations

import math

import pytest

from tune_app import spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.resources import Machine, gpu_sharing, misfit, trials_at_once

from .conftest import refused

GB = 1e9
H100_BOX = Machine(nodes=({"CPU": 16.0, "GPU": 1.0, "memory": 100 * GB},))
TWO_CORES = Machine(nodes=({"CPU": 2.0, "GPU": 0.0, "memory": 16 * GB},))
CLUSTER = Machine(nodes=({"CPU": 3.0}, {"CPU": 3.0}), name="the cluster at x")

# (bundles, machine, limit, trials at once)
COUNTS = [
    pytest.param([{"CPU": 1, "GPU": 0.25}], H100_BOX, 16, 4, id="quarter-gpu-4-on-one-gpu"),
    pytest.param(
        [{"CPU": 1, "GPU": 0.5}, {"CPU": 1}, {"CPU": 1}], H100_BOX, 8, 2, id="ppo-half-gpu-learner"
    ),
    pytest.param([{"CPU": 1}], H100_BOX, 16, 16, id="cpu-only-16"),
    pytest.param([{"CPU": 1}], H100_BOX, 3, 3, id="at-most-the-limit"),
    pytest.param([{"CPU": 1}], TWO_CORES, 8, 2, id="two-cores"),
    pytest.param([{"CPU": 0.5, "memory": 6 * GB}], TWO_CORES, 8, 2, id="memory-decides"),
    pytest.param([{"CPU": 1, "GPU": 0.1}], TWO_CORES, 8, 0, id="gpu-on-a-cpu-machine"),
    pytest.param(
        [{"CPU": 1, "slots": 1}],
        Machine(nodes=({"CPU": 8.0, "slots": 3.0},)),
        8,
        3,
        id="custom-resource",
    ),
    # 6 CPUs in all would hold 3 trials of 2; each 3-CPU node holds one.
    pytest.param([{"CPU": 2}], CLUSTER, 8, 2, id="per-node-on-a-cluster"),
    pytest.param([{"CPU": 1}, {"CPU": 1}], CLUSTER, 8, 3, id="bundles-spread-over-nodes"),
    pytest.param([{"CPU": 1}], Machine.unknown(), 5, 5, id="cluster-not-joined"),
    pytest.param([{"CPU": 0.0}, {"CPU": 1}], TWO_CORES, 8, 2, id="empty-head-beside-others"),
    pytest.param([{"CPU": 0.3}] * 3, Machine(nodes=({"CPU": 0.9},)), 5, 1, id="fixed-point"),
]


@pytest.mark.parametrize(("bundles", "machine", "limit", "expected"), COUNTS)
def test_trials_at_once(bundles, machine, limit, expected):
    assert trials_at_once(bundles, machine, limit) == expected


# (bundles, machine, the resource it lacks, words of the message)
MISFITS = [
    pytest.param(
        [{"CPU": 1, "GPU": 0.5}],
        TWO_CORES,
        "GPU",
        ["needs 0.5 GPUs", "the machine has 0 GPUs"],
        id="gpu-without-gpu",
    ),
    pytest.param(
        [{"CPU": 1, "memory": 100 * GB}],
        TWO_CORES,
        "memory",
        # Ray counts memory in bytes; every line says it in GB, the bundles too
        ["needs 100 GB memory (bundles [{CPU: 1, memory: 100 GB}])", "has 16 GB memory"],
        id="memory",
    ),
    pytest.param(
        [{"CPU": 4}],
        TWO_CORES,
        "CPU",
        ["needs 4 CPUs (bundles [{CPU: 4}])", "has 2 CPUs"],
        id="cpus",
    ),
    pytest.param([{"CPU": 0}], TWO_CORES, "CPU", ["reserves nothing", "empty head"], id="empty"),
    pytest.param(
        [{"CPU": 4}],
        CLUSTER,
        "CPU",
        [
            "the bundle {CPU: 4} of one trial fits no node",
            "the cluster at x has 2 nodes: 3 CPUs; 3 CPUs",
        ],
        id="no-node-holds-the-bundle",
    ),
    pytest.param(
        [{"CPU": 2}, {"CPU": 2}, {"CPU": 2}],
        CLUSTER,
        "CPU",
        ["cannot be placed together", "2 nodes"],
        id="bundles-that-do-not-pack",
    ),
]


@pytest.mark.parametrize(("bundles", "machine", "resource", "words"), MISFITS)
def test_misfit_names_what_is_lacking(bundles, machine, resource, words):
    found = misfit(bundles, machine)
    assert found is not None and found.resource == resource
    for word in words:
        assert word in found.text, found.text


def test_what_fits_is_no_misfit():
    assert misfit([{"CPU": 1, "GPU": 0.25}], H100_BOX) is None
    assert misfit([{"CPU": 64, "GPU": 8}], Machine.unknown()) is None  # checked once joined


@pytest.mark.parametrize(
    ("bundles", "at_once", "words"),
    [
        pytest.param([{"CPU": 1, "GPU": 0.25}], 16, "4 trials share a GPU, 0.25 GPU each", id="4"),
        # CPUs let 2 run at once: 2 share a GPU, not the 4 it could hold
        pytest.param([{"CPU": 8, "GPU": 0.25}], 2, "2 trials share a GPU, 0.25 GPU each", id="2"),
        pytest.param([{"CPU": 8, "GPU": 0.25}], 1, "a trial holds 0.25 GPU", id="one-at-once"),
        pytest.param([{"CPU": 1, "GPU": 0.6}], 2, "a trial holds 0.6 GPU", id="one-a-gpu"),
        pytest.param([{"CPU": 1}, {"CPU": 1, "GPU": 2}], 4, "a trial holds 2 GPUs", id="two"),
        pytest.param([{"CPU": 1}], 4, None, id="none"),
    ],
)
def test_gpu_sharing_says_what_the_trials_at_once_do(bundles, at_once, words):
    assert gpu_sharing(bundles, at_once) == words


def test_local_machine_counts_what_is_given(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert Machine.local(cpus=3).nodes[0]["GPU"] == 2.0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert Machine.local().nodes[0]["GPU"] == 0.0
    planned = Machine.planned(16, 1)
    assert (planned.cpus, planned.total("GPU")) == (16, 1)
    assert planned.name == "the machine of --cpus 16 --gpus 1"
    assert Machine.unknown().cpus == math.inf


def _plan(write_spec, text, machine):
    return make_plan(spec.load(write_spec(text)), machine=machine)


def test_the_ppo_layout_counts_a_gpu_learner(write_spec):
    text = (
        "e:\n  run: PPO\n  env: CartPole-v1\n  seeds: 2\n"
        "  config: {num_learners: 0, num_gpus_per_learner: 0.5}\n"
    )
    plan = _plan(write_spec, text, H100_BOX)
    (ep,) = plan.experiments
    assert ep.at_once == 2
    assert "2 trials at once" in ep.layout.line
    assert "2 trials share a GPU, 0.5 GPU each" in ep.layout.line
    assert "trains slower on a GPU" in ep.layout.line


def test_the_layout_says_idle_cpus_above_two_cpus_a_trial(write_spec):
    text = "e:\n  run: PPO\n  env: CartPole-v1\n  seeds: 8\n"
    (big,) = _plan(write_spec, text, H100_BOX).experiments
    assert "8 trials at once" in big.layout.line and "8 of 16 CPUs left idle" in big.layout.line
    (small,) = _plan(write_spec, text, TWO_CORES).experiments
    assert "idle" not in small.layout.line  # 2 cores: as before


def test_a_known_cluster_gets_the_layout(write_spec):
    text = "e:\n  run: PPO\n  env: CartPole-v1\n  seeds: 4\n"
    cluster = Machine(nodes=({"CPU": 4.0}, {"CPU": 4.0}), name="the cluster at x")
    (ep,) = _plan(write_spec, text, cluster).experiments
    assert ep.layout.chosen == {"num_env_runners": 0, "num_envs_per_env_runner": 8}


VALIDATE_REFUSALS = [
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 1, gpu: 0.5}\n"
        "  config: {alpha: 1.0, beta: 1.0}\n",
        "e.resources_per_trial.gpu",
        ["needs 0.5 GPUs", "has 0 GPUs", "--gpus"],
        id="gpu-without-a-gpu",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 1, memory: 1.0e+15}\n"
        "  config: {alpha: 1.0, beta: 1.0}\n",
        "e.resources_per_trial.memory",
        ["needs 1e+06 GB memory", "(this machine's memory: --cpus and --gpus size", "--address"],
        id="memory-beyond-the-machine",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 0}\n  config: {alpha: 1.0, beta: 1.0}\n",
        "e.resources_per_trial.cpu",
        ["reserves nothing", "cpu: 0.1"],
        id="cpu-zero-empty-head",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 1, gpu: 0.00001}\n"
        "  config: {alpha: 1.0, beta: 1.0}\n",
        "e.resources_per_trial.gpu",
        ["1e-05 is finer than Ray counts resources: in steps of 0.0001", ">= 0.0001"],
        id="gpu-finer-than-ray",
    ),
    pytest.param(
        "e:\n  run: my_func\n  resources_per_trial: {cpu: 0.00001}\n"
        "  config: {alpha: 1.0, beta: 1.0}\n",
        "e.resources_per_trial.cpu",
        ["1e-05 is finer than Ray counts resources: in steps of 0.0001"],
        id="cpu-finer-than-ray",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  simulations: 1\n  cpu_per_simulation: 0.00001\n",
        "e.cpu_per_simulation",
        ["1e-05 is finer than Ray counts resources: in steps of 0.0001"],
        id="simulation-cpu-finer-than-ray",
    ),
    # The head bundle alone does not fit: its key, not the simulations beside it.
    pytest.param(
        "e:\n  run: es_cartpole\n  resources_per_trial: {cpu: 32}\n",
        "e.resources_per_trial.cpu",
        ["one trial needs 32 CPUs", "has 2 CPUs"],
        id="simulations-beside-a-head-too-big",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  simulations: 1\n  cpu_per_simulation: 4\n",
        "e.cpu_per_simulation",
        ["one trial needs 4 CPUs", "has 2 CPUs"],
        id="one-simulation-too-big",
    ),
    pytest.param(
        "e:\n  run: es_cartpole\n  simulations: 3\n",
        "e.simulations",
        ["one trial needs 3 CPUs", "has 2 CPUs"],
        id="too-many-simulations",
    ),
    pytest.param(
        "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_cpus_per_env_runner: 0.00001}\n",
        "e.config.num_cpus_per_env_runner",
        ["1e-05 is finer than Ray counts resources: in steps of 0.0001"],
        id="rllib-runner-cpu-finer-than-ray",
    ),
    pytest.param(
        "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_gpus_per_learner: 0.5}\n",
        "e.config.num_gpus_per_learner",
        ["needs 0.5 GPUs", "set num_gpus_per_learner: 0 to train on CPUs"],
        id="rllib-gpu-learner-without-a-gpu",
    ),
    pytest.param(
        "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_gpus: 1}\n",
        "e.config.num_gpus",
        ["needs 1 GPU", "num_gpus: 1"],
        id="rllib-legacy-gpu-key",
    ),
]


@pytest.mark.parametrize(("text", "path", "words"), VALIDATE_REFUSALS)
def test_validate_refuses_what_cannot_fit(cli, write_spec, tmp_path, text, path, words):
    spec_file = write_spec(text)
    before = sorted(tmp_path.iterdir())
    result = cli("validate", spec_file, "--cpus", "2", "--gpus", "0")
    refused(result, *words, file=spec_file, path=path)
    assert sorted(tmp_path.iterdir()) == before  # nothing written


GPU_NODES = Machine(nodes=({"CPU": 8.0, "GPU": 1.0},) * 2, name="the cluster at x")


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        pytest.param(
            "e:\n  run: my_func\n  resources_per_trial: {cpu: 1, gpu: 2}\n"
            "  config: {alpha: 1.0, beta: 1.0}\n",
            "e.resources_per_trial.gpu",
            ["a node has at most 1 GPU: lower gpu until", "gpu: 0.5"],
            id="function",
        ),
        pytest.param(
            "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_gpus_per_learner: 2}\n",
            "e.config.num_gpus_per_learner",
            ["at most 1 GPU: lower num_gpus_per_learner", "num_gpus_per_learner: 0.5"],
            id="rllib",
        ),
    ],
)
def test_too_many_gpus_on_a_machine_with_gpus_is_told_what_one_node_has(
    write_spec, text, path, words
):
    """`gpu: 2` on nodes of 1 GPU each was told to set gpu: 0 or plan for a machine with GPUs."""
    with pytest.raises(SpecError) as err:
        _plan(write_spec, text, GPU_NODES)
    assert err.value.path == path and "--gpus N" not in str(err.value), err.value
    for word in words:
        assert word in str(err.value), err.value


def test_experiments_beside_one_another_split_only_what_their_trials_take(cli, write_spec):
    """A spec's experiments run at the same time; a GPU split among them all, a GPU experiment
    beside a CPU one (8 trials against 1) was said to run 3 trials at once (8/9 of the GPU),
    where Tune runs 4: the other takes no GPU. The CPUs both take are said to be shared."""
    spec_file = write_spec(
        "experiments:\n"
        "  cpu_side:\n    run: my_func\n    resources_per_trial: {cpu: 2, gpu: 0}\n"
        "    config: {alpha: 1.0, beta: 1.0}\n"
        "  gpu_side:\n    run: my_func\n    num_samples: 8\n"
        "    resources_per_trial: {cpu: 2, gpu: 0.25}\n    config: {alpha: 1.0, beta: 1.0}\n"
    )
    result = cli("validate", spec_file, "--cpus", "16", "--gpus", "1")
    assert result.code == 0, result.err
    assert (
        "4 trials at once (4 trials share a GPU, 0.25 GPU each); that many alone: cpu_side "
        "takes CPUs too, and Tune places both experiments' trials as CPUs free up" in result.out
    )
    assert "2 CPUs; 1 trial at once; that many alone: gpu_side takes CPUs too" in result.out


def test_experiments_taking_a_same_resource_are_counted_alone_and_said_to_share_it(write_spec):
    """3 trials and 1 of 1 CPU on 2 CPUs were said to run 1 at once each, a split nothing holds
    them to: Tune ran the first experiment's 2 at once, the other's trial once they ended."""
    text = (
        "experiments:\n"
        "  sa: {run: my_func, num_samples: 3, config: {alpha: 1.0, beta: 1.0}}\n"
        "  sb: {run: my_func, num_samples: 1, config: {alpha: 1.0, beta: 1.0}}\n"
    )
    sa, sb = _plan(write_spec, text, TWO_CORES).experiments
    assert (sa.at_once, sb.at_once) == (2, 1)
    assert sa.sharing is not None and sb.sharing is not None
    assert (sa.sharing.resources, sa.sharing.experiments, sb.sharing.experiments) == (
        ("CPU",),
        ("sb",),
        ("sa",),
    )
    assert sa.sharing.line == (
        "that many alone: sb takes CPUs too, and Tune places both experiments' trials as CPUs "
        "free up"
    )


def test_the_layout_beside_another_experiment_is_chosen_on_the_part_it_counts_on(write_spec):
    """A GPU-learner PPO beside a CPU experiment (2 trials each, 8 CPUs, 1 GPU): its layout was
    chosen on half of every resource (0.5 GPU: 1 trial at once, 4 CPUs a trial: 2 env runners,
    so 1 trial fit), where the GPU is all its own (2 trials at once, 2 CPUs each: sampling in
    the trial process, both fit)."""
    text = (
        "experiments:\n"
        "  cpu_side: {run: my_func, num_samples: 2, config: {alpha: 1.0, beta: 1.0}}\n"
        "  ppo: {run: PPO, env: CartPole-v1, num_samples: 2, config: {num_gpus_per_learner: 0.5}}\n"
    )
    machine = Machine(nodes=({"CPU": 8.0, "GPU": 1.0},))
    _, ppo = _plan(write_spec, text, machine).experiments
    assert ppo.layout.chosen == {"num_env_runners": 0, "num_envs_per_env_runner": 8}
    assert ppo.at_once == 2 and "; 2 trials at once (" in ppo.layout.line, ppo.layout.line
    assert ppo.layout.line.endswith(
        "; that many alone: cpu_side takes CPUs too, and Tune places "
        "both experiments' trials as CPUs free up"
    )


def test_validate_plans_for_another_machine(cli, write_spec):
    spec_file = write_spec(
        "e:\n  run: my_func\n  num_samples: 4\n  resources_per_trial: {cpu: 1, gpu: 0.25}\n"
        "  config: {alpha: 1.0, beta: 1.0}\n"
    )
    result = cli("validate", spec_file, "--cpus", "16", "--gpus", "1")
    assert result.code == 0, result.err
    assert "checked against 16 CPUs, 1 GPU" in result.out
    # 16 by CPUs alone; the bundles said as the waiting-trials line says them (progress)
    said = "[{CPU: 1, GPU: 0.25}] per trial = 1 CPUs; 4 trials at once (4 trials share a GPU, "
    assert said + "0.25 GPU each)" in result.out
    both = cli("validate", spec_file, "--address", "127.0.0.1:9", "--cpus", "4")
    refused(both, "--address for the cluster there: not both", "leave out --address", path="--cpus")
    with pytest.raises(SystemExit) as usage:
        cli("validate", spec_file, "--cpus", "16", "--gpus", "-1")
    assert usage.value.code == 2
