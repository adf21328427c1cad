"""A metric not in every result (validation every second epoch, a warm-up iteration without it)
or not a number: every consumer skips those results, none crashes or fails a trial on them, and
a metric that is never a number is one error naming the trial (`tune_app.ray_internals.sparse`,
the stopper, the summary). The schedulers and searchers are driven through their own hooks with
stand-in trials; a few small runs on the session's Ray check the whole path."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from ray import tune
from ray.tune.experiment import Trial
from ray.tune.search import Searcher

from tune_app import methods
from tune_app.ray_internals.hyperband import ResumableHyperBand, ResumableHyperBandForBOHB
from tune_app.ray_internals.seeded import SeededASHA, SeededHyperBand, SeededMedian
from tune_app.ray_internals.sparse import LatestMetric, SparseASHA, SparseMedian

from .conftest import user_module


class StandIn(SimpleNamespace):
    """What a scheduler reads of a trial: id, config, status."""

    __hash__ = object.__hash__  # schedulers key their tables by trial

    def __eq__(self, other):
        return self is other


def stand_in(name: str, x: int, **config) -> StandIn:
    """A pending trial of config `x` (and any other `config` keys)."""
    return StandIn(trial_id=name, config={"x": x, **config}, status=Trial.PENDING, is_saving=False)


class Controller:
    """What HyperBand asks of Tune's controller when it halves a bracket."""

    def __init__(self, band):
        self.band, self.stopped = band, []
        # BOHB's HyperBand tells the searcher which trials it pauses.
        self.search_alg = SimpleNamespace(
            searcher=SimpleNamespace(on_pause=lambda _: None, on_unpause=lambda _: None)
        )

    def stop_trial(self, trial):
        self.stopped.append(trial.trial_id)
        self.band.on_trial_remove(self, trial)
        trial.status = Trial.TERMINATED


# ---- schedulers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "fillers"),
    [
        pytest.param(ResumableHyperBand, 2, id="hyperband"),
        pytest.param(SeededHyperBand, 2, id="hyperband-seeded"),
        pytest.param(ResumableHyperBandForBOHB, 0, id="hyperband-for-bohb"),
    ],
)
def test_hyperband_judges_a_rung_on_each_trials_latest_number(cls, fillers):
    """The rung's results lack the metric (it is reported on other steps): each trial counts
    with its latest number, and one that never had a number (text) ranks last. Tune's halving
    read the metric of each trial's result at the rung, and failed."""
    band = cls(time_attr="t", max_t=3, reduction_factor=3)
    band.set_search_properties("score", "max")
    for i in range(fillers):  # the brackets before the one that halves at t=1
        band.on_trial_add(None, stand_in(f"f{i}", 10 + i))
    a, b, c = stand_in("a", 1), stand_in("b", 2), stand_in("c", 3)
    for t in (a, b, c):
        band.on_trial_add(None, t)
    assert band._trial_info[a][0] is band._trial_info[c][0] and band._trial_info[a][0]._halves
    controller = Controller(band)
    for t, first in [(a, 1.0), (b, 5.0), (c, "9.0")]:
        t.status = Trial.RUNNING
        assert band.on_trial_result(controller, t, {"t": 0.5, "score": first}) == "CONTINUE"
    for t in (a, c):  # at the rung, without the metric
        assert band.on_trial_result(controller, t, {"t": 1}) == "PAUSE"
        t.status = Trial.PAUSED
    assert band.on_trial_result(controller, b, {"t": 1}) == "CONTINUE"  # kept: 5 beats 1
    assert sorted(controller.stopped) == ["a", "c"]


@pytest.mark.parametrize("cls", [SparseMedian, SeededMedian], ids=["median", "median-seeded"])
def test_the_median_rule_keeps_a_final_result_only_with_a_number(cls):
    """A trial that ends on a result without the metric: Tune's rule kept that result and read
    its metric at every later comparison (KeyError)."""
    rule = cls(time_attr="training_iteration", grace_period=0, min_samples_required=1)
    rule.set_search_properties("score", "max")
    a, b = stand_in("a", 1), stand_in("b", 2)
    live = SimpleNamespace(get_live_trials=lambda: [a, b])
    for t in (a, b):
        rule.on_trial_add(live, t)
        t.status = Trial.RUNNING
    rule.on_trial_result(live, a, {"training_iteration": 1, "score": 1.0})
    rule.on_trial_complete(live, a, {"training_iteration": 2})
    decisions = [
        rule.on_trial_result(live, b, {"training_iteration": i, "score": 2.0}) for i in (1, 2)
    ]
    assert decisions == ["CONTINUE", "CONTINUE"]
    assert [r["training_iteration"] for r in rule._results[a]] == [1]


def schedulers():
    def asha(cls):
        return cls(time_attr="training_iteration", max_t=8, grace_period=1, reduction_factor=2)

    def median(cls):
        return cls(time_attr="training_iteration", grace_period=0, min_samples_required=1)

    return [
        pytest.param(lambda: asha(SparseASHA), id="asha"),
        pytest.param(lambda: asha(SeededASHA), id="asha-seeded"),
        pytest.param(lambda: median(SparseMedian), id="median"),
        pytest.param(lambda: median(SeededMedian), id="median-seeded"),
    ]


@pytest.mark.parametrize("make", schedulers())
@pytest.mark.parametrize("mode", ["max", "min"])
def test_schedulers_skip_a_metric_reported_as_text(make, mode):
    """Each multiplied the metric by its mode's sign: text failed ("0.9" * -1 is "", and a
    string compared with numbers raised), or was recorded as a value."""
    scheduler = make()
    scheduler.set_search_properties("score", mode)
    a, b = stand_in("a", 1), stand_in("b", 2)
    live = SimpleNamespace(get_live_trials=lambda: [a, b])
    for t in (a, b):
        scheduler.on_trial_add(live, t)
        t.status = Trial.RUNNING
    reports = [(a, 1, "0.90"), (b, 1, 2.0), (a, 2, 3.0), (b, 2, [1.0]), (a, 4, 4.0)]
    decisions = [
        scheduler.on_trial_result(live, t, {"training_iteration": i, "score": v})
        for t, i, v in reports
    ]
    scheduler.on_trial_complete(live, b, {"training_iteration": 3, "score": "done"})
    assert set(decisions) <= {"CONTINUE", "STOP"} and decisions[0] == "CONTINUE"


# ---- searchers ----------------------------------------------------------------------------------


class Recorder(Searcher):
    """A searcher that writes down what it is told of `acc`."""

    def __init__(self) -> None:
        super().__init__(metric="acc", mode="max")
        self.told: list[tuple] = []

    def suggest(self, trial_id):
        return {}

    def on_trial_result(self, trial_id, result):
        self.told.append(("result", result["acc"]))

    def on_trial_complete(self, trial_id, result=None, error=False):
        self.told.append(("complete", None if result is None else result["acc"], error))


@pytest.mark.parametrize(
    ("results", "last", "error", "told"),
    [
        pytest.param(
            [{"acc": 1.0}, {}, {"acc": 2.0}],
            {"loss": 0.1},
            False,
            [("result", 1.0), ("result", 2.0), ("complete", 2.0, False)],
            id="ends-on-a-result-without-it",
        ),
        pytest.param([{}], {"loss": 0.1}, False, [("complete", None, False)], id="never-had-one"),
        pytest.param(
            [{"acc": "0.9"}, {"acc": 0.5}],
            {"acc": "0.9"},
            False,
            [("result", 0.5), ("complete", 0.5, False)],
            id="text",
        ),
        pytest.param(
            [{"acc": 1.0}],
            {"acc": 3.0},
            False,
            [("result", 1.0), ("complete", 3.0, False)],
            id="ends-on-a-number",
        ),
        pytest.param(
            [{"acc": 1.0}], None, True, [("result", 1.0), ("complete", None, True)], id="failed"
        ),
    ],
)
def test_a_searcher_is_told_only_numbers_and_a_trials_latest(results, last, error, told):
    recorder = Recorder()
    searcher = LatestMetric(recorder)
    searcher.suggest("t")
    for result in results:
        searcher.on_trial_result("t", {"training_iteration": 1, **result})
    searcher.on_trial_complete("t", result=last, error=error)
    assert recorder.told == told
    assert searcher.latest == {}  # forgotten once the trial ended


@pytest.mark.parametrize("name", ["hyperopt", "optuna"])
def test_tunes_searchers_learn_a_trials_latest_number(name):
    """Tune's HyperOpt raised on a trial's last result without the metric (failing the trial),
    Optuna read the metric of every result (KeyError) and marked such a trial pruned."""
    entry = methods.SEARCHERS[name]
    built = entry.build(entry.options.model_validate({}), methods.Context(seed=1))
    searcher = LatestMetric(built)
    searcher.set_search_properties("acc", "max", {"x": tune.uniform(0, 1)})
    assert searcher.suggest("t") is not None
    searcher.on_trial_result("t", {"training_iteration": 1, "acc": 0.7})
    searcher.on_trial_result("t", {"training_iteration": 2})
    searcher.on_trial_complete("t", {"training_iteration": 3})
    tunes = built.searcher  # Tune's own searcher, inside the app's SearchesByIndex
    if name == "hyperopt":
        assert tunes._hpopt_trials.trials[0]["result"] == {"loss": -0.7, "status": "ok"}
    else:
        (trial,) = tunes._ot_study.trials
        assert (trial.state.name, trial.value) == ("COMPLETE", 0.7)


def test_model_based_searchers_are_wrapped_and_variant_generators_not(tmp_path):
    from tune_app import spec
    from tune_app.plan.make import make_plan
    from tune_app.tuner import _searcher

    user_module("sparse_metrics.py", tmp_path)
    found = {}
    for search in ("random", "hyperopt"):
        path = tmp_path / f"{search}.yaml"
        path.write_text(
            f"metric: acc\nmode: max\nsearch: {search}\nexperiments:\n"
            "  e: {run: 'sparse_metrics:every_second', config: {x: {randint: [1, 4]}}}\n"
        )
        (ep,) = make_plan(spec.load(path), cpus=2, storage_path=str(tmp_path / "o")).experiments
        found[search] = type(_searcher(ep)).__name__
    assert found == {"random": "BasicVariantGenerator", "hyperopt": "LatestMetric"}


# ---- whole runs ---------------------------------------------------------------------------------

EVERY_SECOND = """
metric: acc
mode: max
{head}
experiments:
  e:
    run: sparse_metrics:{run}
    num_samples: {samples}
    stop: {{acc: 12}}
    config: {{x: {x}}}
"""


@pytest.mark.parametrize(
    ("head", "x", "samples"),
    [
        pytest.param("", "{grid_search: [1, 2, 3]}", 1, id="fifo"),
        pytest.param(
            "scheduler: {type: asha, max_t: 5, grace_period: 1, reduction_factor: 2}",
            "{grid_search: [1, 2, 3]}",
            1,
            id="asha",
        ),
        pytest.param("search: hyperopt\nseed: 1", "{randint: [1, 4]}", 3, id="hyperopt"),
    ],
)
def test_a_metric_reported_every_second_iteration_ranks_by_those(
    ray_session, cli, write_spec, tmp_path, head, x, samples
):
    """`acc` = x * step is reported on even iterations only; a trial not stopped on `acc: 12`
    ends on iteration 5, without it (HyperOpt raised on such a trial's end, failing it). The
    search runs to its end (it was ended as 'never reported' at the first result), and each
    trial's score is its value at the last even iteration it reached."""
    user_module("sparse_metrics.py", tmp_path)
    # expect reads the best trial's value, not its last result's (which may lack it)
    head += "\nexpect: {acc: {min: 4}}"
    text = EVERY_SECOND.format(head=head, run="every_second", x=x, samples=samples)
    result = cli("run", write_spec(text), "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": samples * (3 if "grid" in x else 1)}
    for t in summary["trials"]:
        x_, done = t["config"]["x"], t["iterations"]
        assert t["metric"] == x_ * (done // 2 * 2), t  # 2x or 4x: an iteration that had it
        assert done == (4 if x_ == 3 else 5) or "asha" in head  # stop: {acc: 12}, or the end
    assert "asha" in head or any(t["iterations"] == 5 for t in summary["trials"])
    best = max(t["config"]["x"] for t in summary["trials"])
    assert summary["best"]["metric"] == 4 * best and summary["missing"] == {}


def test_a_warm_up_iteration_without_the_metric_is_no_error(ray_session, cli, write_spec, tmp_path):
    """The stopper ended the search at a trial's first result when the metric was not in it."""
    user_module("sparse_metrics.py", tmp_path)
    text = EVERY_SECOND.format(head="", run="warm_up", x="{grid_search: [1, 2]}", samples=1)
    result = cli("run", write_spec(text), "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    assert {t["config"]["x"]: (t["metric"], t["iterations"]) for t in summary["trials"]} == {
        1: (4.0, 4),
        2: (8.0, 4),
    }


def test_a_metric_reported_as_text_is_an_error_naming_the_trial(
    ray_session, cli, write_spec, tmp_path
):
    """It ran as if fine, with no best trial, and exited 0."""
    user_module("sparse_metrics.py", tmp_path)
    text = EVERY_SECOND.format(head="", run="as_text", x="{grid_search: [1, 2]}", samples=1)
    spec_file = write_spec(text)
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 2
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    first = json.loads((tmp_path / "o" / "e" / "results.jsonl").read_text().splitlines()[0])
    line = (
        f"error: {spec_file}: experiments.e.metric: 'acc' was reported as a string "
        f"({first['acc']!r}) by trial {first['trial_id']}, never as a number, so it can never "
        "stop or rank a trial; report it as an int or a float"
    )
    assert line in result.err.splitlines()
    shown = f"a string ({first['acc']!r}) by trial {first['trial_id']}"
    assert summary["best"] is None  # and the stop key on it could stop nothing either:
    assert summary["unusable"] == {"metric": shown, "stop.acc": shown}


def test_a_wrapped_searcher_is_saved_and_restored_with_tunes_search_state(tmp_path):
    """Tune saves a searcher's wrappers apart from it (`SearchGenerator.save_to_dir` walks
    `.searcher`); a resumed run still knows each live trial's latest number."""
    from ray.tune.search import SearchGenerator

    def wrapped():
        entry = methods.SEARCHERS["hyperopt"]
        built = entry.build(entry.options.model_validate({}), methods.Context(seed=1))
        searcher = LatestMetric(built)
        searcher.set_search_properties("acc", "max", {"x": tune.uniform(0, 1)})
        return searcher

    first = wrapped()
    first.suggest("t")
    first.on_trial_result("t", {"training_iteration": 1, "acc": 0.7})
    SearchGenerator(first).save_to_dir(str(tmp_path), "s")
    again = SearchGenerator(wrapped())
    again.restore_from_dir(str(tmp_path))
    assert again.searcher.latest == {"t": {"acc": 0.7}}
    again.searcher.on_trial_complete("t", {"training_iteration": 2})
    assert again.searcher.searcher.searcher._hpopt_trials.trials[0]["result"]["loss"] == -0.7
