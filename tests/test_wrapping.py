"""Every scheduler the table builds is Tune's own, unmodified, inside the app's wrappers
(`tune_app.ray_internals.wrapping`): the variants (numbers only, seeds judged together,
HyperBand resumable) change what Tune's scheduler is handed, not its methods. Ray-free: no trial
runs."""

from __future__ import annotations

from pathlib import Path
from tempfile import mkdtemp
from types import SimpleNamespace

import pytest
from ray import cloudpickle, tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import (
    ASHAScheduler,
    FIFOScheduler,
    HyperBandForBOHB,
    HyperBandScheduler,
    MedianStoppingRule,
    PopulationBasedTraining,
    TrialScheduler,
)
from ray.tune.schedulers.pb2 import PB2
from ray.tune.search import Searcher

from tune_app import methods
from tune_app.ray_internals.wrapping import Wraps

from .test_sparse import StandIn, stand_in

OPTIONS = {
    "pbt": {"hyperparam_mutations": {"x": [1, 2]}},
    "pb2": {"hyperparam_bounds": {"x": [0.0, 1.0]}},
}


def built(name: str, variant: str) -> TrialScheduler:
    entry = methods.SCHEDULERS[name]
    ctx = {
        "plain": methods.Context(),
        "seeded": methods.Context(seeds_aggregate="median"),
        "for_bohb": methods.Context(searcher="bohb"),
    }[variant]
    return entry.build(entry.options.model_validate(OPTIONS.get(name, {})), ctx)


# (scheduler, variant, Tune's class inside; None: Tune's own, unwrapped)
CASES = [
    ("fifo", "plain", None),
    ("hyperband", "plain", HyperBandScheduler),
    ("hyperband", "seeded", HyperBandScheduler),
    ("hyperband", "for_bohb", HyperBandForBOHB),
    ("asha", "plain", ASHAScheduler),
    ("asha", "seeded", ASHAScheduler),
    ("median", "plain", MedianStoppingRule),
    ("median", "seeded", MedianStoppingRule),
    ("pbt", "plain", PopulationBasedTraining),
    ("pb2", "plain", PB2),
]


@pytest.mark.parametrize(
    ("name", "variant", "tunes"), [pytest.param(*c, id="-".join(c[:2])) for c in CASES]
)
def test_each_variant_wraps_tunes_own_scheduler(name, variant, tunes):
    scheduler = built(name, variant)
    if tunes is None:
        assert type(scheduler) is FIFOScheduler
        return
    assert isinstance(scheduler, Wraps)
    inner = scheduler.tune
    if tunes in (PopulationBasedTraining, PB2):
        # The one hook PBT lacks (an exploit's donor): a subclass overriding that alone.
        ours = [c for c in type(inner).__mro__ if c.__module__.startswith("tune_app")]
        assert tunes in type(inner).__mro__ and ours
        for cls in ours:
            methods_of = {k for k, v in vars(cls).items() if callable(v)}
            assert methods_of <= {"_log_config_on_step", "_clones", "_mutated_paths"}
    else:
        assert type(inner) is tunes  # Tune's class itself: no method of it replaced
    assert scheduler.set_search_properties("score", "max")
    assert scheduler.metric == "score" == inner.metric


@pytest.mark.parametrize(
    ("name", "variant", "tunes"), [pytest.param(*c, id="-".join(c[:2])) for c in CASES if c[2]]
)
def test_a_wrapped_scheduler_is_pickled_with_the_tuner_and_runs_after(name, variant, tunes):
    """Tune pickles the scheduler with the Tuner (cloudpickle) and a resume unpickles it: the
    wrappers' reads that fall through to Tune's scheduler must not loop before it is there."""
    scheduler = cloudpickle.loads(cloudpickle.dumps(built(name, variant)))
    assert type(scheduler.tune) is type(built(name, variant).tune)
    scheduler.set_search_properties("score", "max")
    assert isinstance(scheduler.debug_string(), str)
    if tunes not in (PopulationBasedTraining, PB2):  # those read a whole Trial when it is added
        trial = stand_in("t", 1)
        scheduler.on_trial_add(None, trial)  # type: ignore[arg-type]
        result = {"score": 1.0, "training_iteration": 1, "time_total_s": 1.0}
        told = SimpleNamespace(on_pause=lambda _: None, on_unpause=lambda _: None)  # BOHB's
        controller = SimpleNamespace(search_alg=SimpleNamespace(searcher=told))
        decision = scheduler.on_trial_result(controller, trial, result)  # type: ignore[arg-type]
        assert decision in (TrialScheduler.CONTINUE, TrialScheduler.PAUSE)
    with pytest.raises(AttributeError):
        scheduler.no_such_attribute  # noqa: B018


# ---- searchers ----------------------------------------------------------------------------------


class Limits(Searcher):
    """A searcher that takes a concurrency limit itself (as TuneBOHB does)."""

    def __init__(self) -> None:
        super().__init__(metric="score", mode="max")
        self.limit: int | None = None

    def suggest(self, trial_id):
        return {"x": 1}  # the second value of a choice, searched by index

    def set_search_properties(self, metric, mode, config, **spec):
        return True

    def save(self, checkpoint_path):
        Path(checkpoint_path).write_text(str(self.limit))

    def restore(self, checkpoint_path):
        self.limit = None if (text := Path(checkpoint_path).read_text()) == "None" else int(text)

    def set_max_concurrency(self, max_concurrent):
        self.limit = max_concurrent
        return True


def test_a_searcher_keeps_its_own_concurrency_limit_but_not_under_seeds():
    """The wrappers hand the limit on; under SeedRepeater the searcher's suggestions are
    configurations, each run once per seed, so the limit on trials is left to Tune's
    ConcurrencyLimiter (as under Tune's Repeater)."""
    from tune_app.methods.by_index import SearchesByIndex
    from tune_app.ray_internals.seeded import SeedRepeater
    from tune_app.ray_internals.sparse import LatestMetric

    inner = Limits()
    assert LatestMetric(SearchesByIndex(inner)).set_max_concurrency(3) and inner.limit == 3
    seeded = Limits()
    assert not LatestMetric(SeedRepeater(seeded, [0, 1], "mean")).set_max_concurrency(3)
    assert seeded.limit is None


def test_the_searchers_wrappers_are_saved_apart_and_restored():
    """Tune saves each wrapper's state under its class name (`SearchGenerator.save_to_dir`
    walks `.searcher`): a resumed seeded search goes on with the configuration whose seeds were
    being made, and suggests by index as before."""
    from ray.tune.search import SearchGenerator

    from tune_app.methods.by_index import SearchesByIndex
    from tune_app.ray_internals.seeded import SeedRepeater
    from tune_app.ray_internals.sparse import LatestMetric

    def chain():
        searcher = LatestMetric(SeedRepeater(SearchesByIndex(Limits()), [0, 1], "mean"))
        searcher.set_search_properties("score", "max", {"x": tune.choice(["a", "b"])})
        return searcher

    first = chain()
    assert first.suggest("a") == {"x": "b", "seed": 0}
    first.on_trial_result("a", {"score": 2.0})
    state = SearchGenerator(first)
    state.save_to_dir(str(tmp := Path(mkdtemp())), "s")
    again = SearchGenerator(chain())
    again.restore_from_dir(str(tmp))
    repeater = again.searcher.searcher
    assert again.searcher.latest == {"a": {"score": 2.0}}
    assert repeater.suggest("b") == {"x": "b", "seed": 1}  # the second seed of the same one
    assert repeater.groups["b"].first == "a"


class Counted(StandIn):
    """A stand-in trial that counts how often its status is read."""

    reads = 0

    def __init__(self, status, **kwargs):
        super().__init__(**kwargs)
        self.status = status

    @property
    def status(self):
        Counted.reads += 1
        return self.__dict__["_status"]

    @status.setter
    def status(self, value):
        self.__dict__["_status"] = value


class Controller:
    """What a scheduler's choice reads of Tune's controller: its list of trials."""

    def __init__(self, trials):
        self.trials = trials

    def get_trials(self):
        return self.trials


@pytest.mark.parametrize("tunes", [FIFOScheduler, ASHAScheduler])
def test_skipping_ended_trials_chooses_as_tune_does(tunes):
    """Trials end, fail, start, pause and resume in a random order (an ended or failed trial
    runs no more): after every change the wrapper chooses the trial Tune's own scheduler
    chooses."""
    import random

    from tune_app.ray_internals.wrapping import SkipsEnded

    rng = random.Random(7)
    statuses = [Trial.PENDING, Trial.RUNNING, Trial.PAUSED, Trial.TERMINATED, Trial.ERROR]
    trials = [StandIn(trial_id=str(i), status=Trial.PENDING) for i in range(60)]
    controller = Controller(trials)
    kwargs = {} if tunes is FIFOScheduler else {"metric": "m", "mode": "max"}
    alone, wrapped = tunes(**kwargs), SkipsEnded(tunes(**kwargs))
    ended = (Trial.TERMINATED, Trial.ERROR)
    for _ in range(400):
        trial = rng.choice([t for t in trials if t.status not in ended] or trials)
        if trial.status not in ended:
            trial.status = rng.choice(statuses)
        assert wrapped.choose_trial_to_run(controller) is alone.choose_trial_to_run(controller)
    assert wrapped.ended > 0


def test_a_choice_reads_each_ended_trial_once_not_at_every_choice():
    from tune_app.ray_internals.wrapping import SkipsEnded

    trials = [Counted(trial_id=str(i), status=Trial.TERMINATED) for i in range(10_000)]
    trials += [Counted(trial_id="p", status=Trial.PENDING)]
    controller, wrapped = Controller(trials), SkipsEnded(FIFOScheduler())
    Counted.reads = 0
    for _ in range(100):
        assert wrapped.choose_trial_to_run(controller) is trials[-1]
    assert Counted.reads <= 10_000 + 2 * 100  # Tune's FIFO alone: 10,001 at every choice
    assert cloudpickle.loads(cloudpickle.dumps(wrapped)).ended == 0  # a restore starts over
