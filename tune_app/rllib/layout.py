"""Each RLlib trial's sampling layout, chosen for the search: how many env-runner processes, how
many vectorized envs each, for the keys the spec leaves out, given how many trials run at once.

A table keyed by algorithm family (`tables.LAYOUT_FAMILY`): what pays differs with how an
algorithm alternates sampling and learning. Ray-free; measured in docs/rllib_layout.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from tune_app.errors import SpecError
from tune_app.kinds import Layout
from tune_app.resources import Machine, gpu_sharing, misfit, trials_at_once
from tune_app.rllib.keys import algorithm_keys
from tune_app.rllib.resources import resources
from tune_app.rllib.tables import FRAGMENT_CHECKED, LAYOUT_FAMILY
from tune_app.space import whole_number
from tune_app.spec.resolved import Experiment
from tune_app.words import counted

# The keys a layout sets where the spec does not (legacy names are already translated to these).
RUNNERS, ENVS, LEARNERS = "num_env_runners", "num_envs_per_env_runner", "num_learners"
LAYOUT_KEYS = (RUNNERS, ENVS, LEARNERS)
FRAGMENT = "rollout_fragment_length"  # with the train batch's keys, what PPO checks it against
BATCH, PER_LEARNER = "train_batch_size", "train_batch_size_per_learner"
FRAGMENT_KEYS = (FRAGMENT, ENVS, RUNNERS, LEARNERS, PER_LEARNER, BATCH)
# Vectorized envs per sampling process in all: on 2 cores, 4 PPO CartPole trials sampling 8 envs
# in the trial process ran at 2,594 env steps/s against 1,410-1,466 with 1 env.
VECTOR_ENVS = 8
RLLIB = "rllib"  # the spec's `layout: rllib`: RLlib's own defaults
# Said beside a GPU learner: on an H100 (16 CPUs), PPO CartPole with num_gpus_per_learner 0.5
# sampled 220 env steps/s a trial against 585 on CPU alone (docs/big_machines.md).
GPU_LEARNER_COST = "a small network trains slower on a GPU (PPO CartPole: 2.7x)"


@dataclass(frozen=True)
class Choice:
    """A family's answer for a trial with `budget` CPUs: the keys to set (None: leave RLlib's
    default) and why, in a few words."""

    runners: int | None
    envs: int | None
    learners: int | None
    why: str


# How an algorithm family samples, as the layout that pays for it: (budget, defaults, runners).
Family = Callable[[int, dict[str, Any], int | None], Choice]


def _synchronous(budget: int, defaults: dict[str, Any], runners: int | None) -> Choice:
    """PPO samples, then trains: an env-runner process idles while the learner trains. With
    room for fewer than 2 runners, sampling moves into the trial's process (vectorized); with
    more, runners sample in parallel, the same envs in all."""
    given = runners is not None
    if runners is None:  # above 2 CPUs a trial unmeasured: at most RLlib's 2 runners
        runners = 0 if budget < 3 else min(budget - 1, int(defaults.get(RUNNERS) or 2))
    envs = max(1, VECTOR_ENVS // max(runners, 1))
    if given:  # no count said: a written count of envs, or 3 runners' 2 each, is not 8 in all
        return Choice(runners, envs, None, "{alg} samples, then trains")
    if runners == 0:
        return Choice(0, envs, None, "no env-runner process: {alg} trains between samples")
    return Choice(runners, envs, None, "runners sample in parallel, then {alg} trains")


def _asynchronous(budget: int, defaults: dict[str, Any], runners: int | None) -> Choice:
    """APPO and IMPALA learn while their runners sample: keep runners, at most RLlib's default
    number (more make the samples staler); the main process trains when no learner fits."""
    learners = int(defaults.get(LEARNERS) or 0)
    # The main process and its learners take 1 CPU each by default; a runner count the spec
    # wrote is kept, so the learners make way for it as for the 1 runner kept otherwise.
    if budget - 1 - learners < (1 if runners is None else runners):
        learners = 0
    if runners is None:
        runners = max(1, min(int(defaults.get(RUNNERS) or 1), budget - 1 - learners))
    return Choice(runners, None, learners, "env runners sample while {alg} learns")


def _off_policy(budget: int, defaults: dict[str, Any], runners: int | None) -> Choice:
    """DQN and SAC (Ray 2.60, dqn.py `calculate_rr_weights` and `training_step`): each training
    step samples rollout_fragment_length x num_envs_per_env_runner x max(num_env_runners, 1)
    env steps, then makes one update (training_intensity: as many as its ratio asks, a ratio
    that counts num_env_runners + 1 processes). More runners or envs would change the updates
    per env step, so the only layout kept is RLlib's default: 0 runners, 1 env, which samples
    in the trial's process and lets 2 trials run on 2 CPUs where 1 runner each allowed 1: a DQN
    CartPole search of 4 trials ran at 51 env steps/s against 21 with `num_env_runners: 1`
    (2 cores under heavy load, docs/rllib_layout.md)."""
    return Choice(
        0 if runners is None else runners,
        None,
        None,
        "{alg} learns as RLlib's "
        "defaults do: updates per env step, replay ratio and n-step unchanged",
    )


FAMILIES: dict[str, Family] = {
    "synchronous": _synchronous,
    "asynchronous": _asynchronous,
    "off-policy": _off_policy,
}


def at_once(exp: Experiment, trials: int, machine: Machine) -> int:
    """How many trials the search can run at once before sizing their samplers: its trials,
    under max_concurrent_trials, as many as fit with 1 CPU each and the GPUs the config asks
    for (a learner's 0.5 GPU: 2 on one GPU)."""
    limit = min(trials, exp.max_concurrent_trials or trials)
    config = exp.config
    try:
        gpus = sum(b.get("GPU", 0.0) for b in resources(exp.run, config).bundles)
    except SpecError:  # a config the plan refuses: its error says why
        gpus = 0.0
    smallest = {"CPU": 1.0, **({"GPU": gpus} if gpus else {})}
    return max(1, trials_at_once([smallest], machine, limit))


def choose(exp: Experiment, trials: int, machine: Machine) -> tuple[Experiment, Layout]:
    """The experiment with the layout keys it leaves out set for the search on `machine` (its
    part of it), and the layout said in one line. Keys the spec wrote (any spelling, searched or
    not) are kept."""
    config = exp.config
    name = exp.run
    family = FAMILIES.get(LAYOUT_FAMILY.get(name, ""))
    chosen: dict[str, Any] = {}
    if exp.layout == RLLIB:
        why = "layout: rllib keeps RLlib's defaults"
    elif not machine.known:
        why = "a cluster's resources are known once joined: RLlib's defaults"
    elif family is None:
        why = f"no layout is known for {name}: RLlib's defaults"
    else:
        chosen, why = _fill(name, config, family, at_once(exp, trials, machine), machine.cpus)
    laid_out = replace(exp, config={**config, **chosen}) if chosen else exp
    by_app = family is not None and exp.layout != RLLIB and machine.known
    return laid_out, Layout(chosen=chosen, why=why, by_app=by_app)


def _fill(
    name: str, config: dict[str, Any], family: Family, concurrent: int, cpus: float
) -> tuple[dict[str, Any], str]:
    """The keys the spec left out, as the family would set them for `concurrent` trials."""
    defaults = algorithm_keys(name).defaults
    written = config.get(RUNNERS)
    runners = written if isinstance(written, int) and not isinstance(written, bool) else None
    budget = max(1, int(cpus // concurrent))
    c = family(budget, defaults, runners)
    wanted = {RUNNERS: c.runners, ENVS: c.envs, LEARNERS: c.learners}
    if c.envs is not None and ENVS not in config:  # the widest vector the fragments written fit
        laid = {**config, **{k: v for k, v in wanted.items() if v is not None and k not in config}}
        fits = (e for e in range(c.envs, 0, -1) if fragment_misfit(name, {**laid, ENVS: e}) is None)
        wanted[ENVS] = next(fits, None)  # none: RLlib's default, which the plan then refuses
    chosen = {
        k: v for k, v in wanted.items() if v is not None and k not in config and v != defaults[k]
    }
    kept = [k for k, v in wanted.items() if v is not None and k in config]
    why = c.why.format(alg=name)
    if wanted[ENVS] != c.envs:
        why += f"; fewer envs for {FRAGMENT} as written"
    if kept:
        why += f"; {', '.join(kept)} as written"
    return chosen, why


def fragment_misfit(name: str, config: dict[str, Any]) -> SpecError | None:
    """RLlib 2.60's refusal (`validate_train_batch_size_vs_rollout_fragment_length`, for
    `FRAGMENT_CHECKED`) of a config that samples the train batch in rounds of
    rollout_fragment_length x num_envs_per_env_runner x max(num_env_runners, 1) steps that
    overshoot it by more than 10%; None where they do not, or a number in it is "auto" or
    searched (RLlib then checks the point drawn)."""
    if name not in FRAGMENT_CHECKED:
        return None
    defaults = algorithm_keys(name).defaults
    given: dict[str, Any] = {k: config.get(k, defaults.get(k)) for k in FRAGMENT_KEYS}
    learners, batch = given[LEARNERS], given[BATCH]
    batch_text = f"{PER_LEARNER} {given[PER_LEARNER]} x {learners or 1} learners"
    if given[PER_LEARNER] is None and whole_number(batch) and whole_number(learners):
        given[PER_LEARNER], batch_text = batch // (learners or 1), f"{BATCH} {batch}"
    fragment, envs, runners, _, per_learner, _ = (given[k] for k in FRAGMENT_KEYS)
    if not all(whole_number(v) for v in (fragment, envs, runners, learners, per_learner)):
        return None
    total, width = per_learner * (learners or 1), envs * max(runners, 1)
    if fragment * width < 1 or -total % (fragment * width) <= 0.1 * total:
        return None  # the whole rounds pass the batch by at most 10%
    over = -total % (fragment * width)
    fits = f" or {total // width}" if total // width else ""
    return SpecError(
        f"{name} refuses {FRAGMENT} {fragment} with {ENVS} {envs} and {RUNNERS} {runners}: its "
        f"rounds of sampling, {fragment} steps in each of {width} envs, overshoot the train "
        f"batch ({batch_text}) by more than 10% ({total + over} steps)",
        path=f"config.{FRAGMENT}",
        suggestion=f"write {FRAGMENT}: auto{fits}, or fewer envs",
    )


def layout_line(exp: Experiment, layout: Layout, concurrent: int, machine: Machine) -> str:
    """'PPO layout: sampling in the trial process, 8 envs; 2 trials at once (why)', with the
    GPU sharing said, and the CPUs a layout the app chose leaves idle."""
    config, name = exp.config, exp.run
    defaults = algorithm_keys(name).defaults
    runners = config.get(RUNNERS, defaults.get(RUNNERS))
    envs = config.get(ENVS, defaults.get(ENVS))
    envs_text = counted(envs, "env") if isinstance(envs, int) else f"envs {envs}"
    if runners == 0:
        where = f"sampling in the trial process, {envs_text}"
    else:
        where = f"{runners} env runner{'s' * (runners != 1)} x {envs_text}"  # any value written
    bundles = resources(name, config).bundles
    notes = [layout.why]
    sharing = gpu_sharing(bundles, concurrent)
    if sharing is not None:
        notes.append(f"{sharing}: {GPU_LEARNER_COST}")
    idle = machine.cpus - concurrent * sum(b.get("CPU", 0.0) for b in bundles)
    # Said from 2 idle CPUs: on 2 cores one PPO trial sampling in its own process (1 CPU) was
    # measured fastest, and its other CPU is no waste to report.
    fewer = trials_at_once(bundles, machine, concurrent + 1) > concurrent  # than would fit
    if layout.by_app and math.isfinite(idle) and idle >= 2 and fewer:
        notes.append(
            f"{idle:g} of {machine.cpus:g} CPUs left idle: the trials take the CPUs measured "
            "to pay; set num_env_runners or num_cpus_per_learner to give them more"
        )
    return f"{name} layout: {where}; {counted(concurrent, 'trial')} at once ({'; '.join(notes)})"


def fastest_fit(exp: Experiment, machine: Machine) -> str | None:
    """The family's layout for the experiment's search with none of its keys written, as
    config keys ('num_env_runners: 0, num_envs_per_env_runner: 8'), for the fit advice."""
    family = FAMILIES.get(LAYOUT_FAMILY.get(exp.run, ""))
    if family is None or not machine.known:
        return None
    config = exp.config
    blank = {k: v for k, v in config.items() if k not in LAYOUT_KEYS}
    chosen, why = _fill(exp.run, blank, family, at_once(exp, exp.trials(), machine), machine.cpus)
    defaults = algorithm_keys(exp.run).defaults
    keys = {k: chosen.get(k, defaults.get(k)) for k in LAYOUT_KEYS if k in chosen or k in config}
    try:
        if not keys or misfit(resources(exp.run, {**blank, **keys}).bundles, machine):
            return None
    except SpecError:  # a config the plan refuses for its own reason
        return None
    changed = [f"{k}: {v}" for k, v in keys.items() if k not in config or config[k] != v]
    return f"{', '.join(changed)} ({why})"
