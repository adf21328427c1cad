"""The plan's types: a spec joined with its trainables, sized and checked (`tune_app.plan.make`
makes them). A leaf of types, so the modules that run or record a plan need not import the
planner."""

from __future__ import annotations

from dataclasses import dataclass

from tune_app.envs import EnvRef
from tune_app.eta import Plan as TrialLengths
from tune_app.kinds import Layout
from tune_app.registry import TrainableRef
from tune_app.resources import Machine
from tune_app.rundir.location import RunLocation
from tune_app.spec.models import Mode
from tune_app.spec.resolved import Experiment, Spec
from tune_app.warmstart.earlier import WarmStart


@dataclass(frozen=True)
class Sharing:
    """What an experiment's trials take that the spec's other experiments' trials take too: the
    experiments run at the same time and Tune places each one's trials as that frees up, so no
    experiment is held to a part of the machine, and its trials at once are what it runs alone."""

    resources: tuple[str, ...]  # Ray's names: CPU, GPU, memory, custom
    experiments: tuple[str, ...]  # the other experiments whose trials take them

    @property
    def line(self) -> str:
        """'that many alone: sb takes CPUs too, and Tune places both experiments' trials as CPUs
        free up', said after an experiment's trials at once."""
        said = " and ".join({"CPU": "CPUs", "GPU": "GPUs"}.get(r, r) for r in self.resources)
        others = len(self.experiments)
        takes = "takes" if others == 1 else "take"
        every = "both" if others == 1 else f"all {others + 1}"
        return (
            f"that many alone: {', '.join(self.experiments)} {takes} {said} too, and Tune "
            f"places {every} experiments' trials as {said} free up"
        )


@dataclass(frozen=True)
class ExperimentPlan:
    """One experiment ready to run: its trainable, metric, size and resource bundles.

    `experiment` is the spec's, with legacy RLlib keys and metric names already translated.
    """

    experiment: Experiment
    trainable: TrainableRef
    env: EnvRef | None  # checked for registered trainables and RLlib; user functions get the text
    metric: str | None
    mode: Mode | None
    trials: int
    trials_exact: bool  # False for model-based searchers, which may stop early
    bundles: tuple[dict[str, float], ...]  # the trial's placement group, head bundle first
    # Trials at once on the whole machine, as Tune runs them alone (`sharing` says what the
    # spec's other experiments take too), every resource of the bundles counted, at most its
    # trials and max_concurrent_trials.
    at_once: int
    iterations: int | None  # bound on the iterations of all trials, when `stop` gives one
    folder: RunLocation  # where its run folder is, local or on cloud storage
    searched: tuple[str, ...]  # config paths of the searched parameters
    layout: Layout | None = None  # the sampling layout the kind chose for the search, if any
    warm: WarmStart | None = None  # what its searcher is handed from earlier runs (warm_start)
    # How long its trials run where its scheduler stops some early (the ETA's plan); None: none
    # is stopped early, each runs to its stop.
    trial_ends: TrialLengths | None = None
    stop_iterations: int | None = None  # the spec's stop on a trial's training_iteration
    sharing: Sharing | None = None  # None: the spec's other experiments take none of it

    @property
    def location(self) -> str:
        """Where the results are, as a user names it (a folder or a URI)."""
        return self.folder.where

    @property
    def name(self) -> str:
        return self.experiment.name

    @property
    def ranked_by(self) -> tuple[str, ...]:
        """The keys that rank its trials: the metric, or each objective of a search of several
        (a trial whose value of any of them turns NaN or infinite has diverged)."""
        if self.metric:
            return (self.metric,)
        return tuple(o.name for o in self.experiment.objectives)

    @property
    def search_path(self) -> tuple[str, ...]:
        """The folders its user code is found in: its trainable's, then its env's."""
        env_path = self.env.search_path if self.env is not None else ()
        return tuple(dict.fromkeys([*self.trainable.kind.search_path, *env_path]))

    @property
    def env_modules(self) -> list[str]:
        """The modules of the user env classes it names."""
        envs = self.env.members if self.env is not None else ()
        return [e.env.partition(":")[0] for e in envs if e.kind == "class"]

    @property
    def trial_cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)


@dataclass(frozen=True)
class Plan:
    """A whole spec file, ready to run; `machine` is what the trial sizes were checked against
    (this machine, the one `--cpus`/`--gpus` name, or a cluster's nodes)."""

    spec: Spec
    experiments: tuple[ExperimentPlan, ...]
    machine: Machine
    warnings: tuple[str, ...] = ()  # the spec's legacy-key warnings, then the plan's
    smoke: bool = False  # shrunk by --smoke: metric expectations are not checked

    @property
    def cpus(self) -> float:
        """The machine's CPUs; infinite for a cluster not yet joined."""
        return self.machine.cpus
