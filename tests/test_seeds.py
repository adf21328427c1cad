"""Seeds as an axis: every configuration runs on each seed and is judged by its aggregate (mean,
iqm, median) with a bootstrap interval, by the searcher, `best`, `expect`, `analyze` and
`report`; `evaluate` re-runs the top configurations on fresh seeds."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tune_app import seeds, spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan

from .conftest import refused, user_module
from .test_sparse import Controller, stand_in


@pytest.mark.parametrize(
    ("how", "expected"),
    [("mean", 22 / 5), ("median", 3.0), ("iqm", 3.0)],  # iqm of 5 values: the middle 3
)
def test_aggregates(how, expected):
    assert seeds.aggregate([1.0, 2.0, 3.0, 4.0, 12.0], how) == pytest.approx(expected)
    assert seeds.aggregate([], how) is None


def test_iqm_drops_a_quarter_at_each_end():
    values = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 100.0]
    assert seeds.aggregate(values, "iqm") == pytest.approx(3.5)  # mean of 2, 3, 4, 5


def test_the_bootstrap_interval_holds_the_aggregate_and_is_repeatable():
    values = [1.0, 2.0, 3.0, 4.0, 12.0]
    low, high = seeds.bootstrap_interval(values, "mean")
    assert low < seeds.aggregate(values, "mean") < high
    assert (low, high) == seeds.bootstrap_interval(values, "mean")
    assert seeds.bootstrap_interval([1.0], "mean") is None
    steady = seeds.bootstrap_interval([5.0, 5.0, 5.0], "mean")
    assert steady == (5.0, 5.0)


def test_trials_group_into_configurations_by_aggregate():
    def trial(i, x, seed, score):
        return SimpleNamespace(trial_id=i, params={"x": x, "seed": seed}, config={}, score=score)

    trials = [trial("a", 1, 0, 10.0), trial("b", 1, 1, -2.0), trial("c", 2, 0, 5.0)]
    trials.append(trial("d", 2, 1, 5.0))
    top, other = seeds.group(trials, "mean", "max")
    assert top.params == {"x": 2} and top.score == 5.0 and top.trial_ids == ["c", "d"]
    assert other.params == {"x": 1} and other.seeds == [0, 1]
    assert seeds.group(trials, "mean", "min")[0].params == {"x": 1}


def test_every_reader_names_the_best_configuration_and_ranks_incomplete_ones_after():
    """x=1 scored 10 on its one surviving seed (two failed); x=3's luckiest trial scored 12 but
    its mean is 4; x=2 scored 5 on all three. The best is x=2, in summary.json's `best`, the
    configurations, `analyze`'s best line and `report`'s header alike."""
    from tune_app.readback import analyze, report
    from tune_app.rundir.read import ExperimentResults
    from tune_app.rundir.records import ERRORED, FINISHED, RunSummary, TrialOutcome

    def trial(i, x, seed, score):
        return TrialOutcome(
            trial_id=f"aaaaa_{i:05d}",
            status=FINISHED if score is not None else ERRORED,
            config={"x": x, "seed": seed},
            score=score,
            iterations=3,
            params={"x": x, "seed": seed},
            cause=None if score is not None else "RuntimeError",
        )

    scores = {1: [10.0, None, None], 2: [5.0, 5.0, 5.0], 3: [12.0, 0.0, 0.0]}
    trials = [
        trial(3 * (x - 1) + seed, x, seed, score)
        for x, values in scores.items()
        for seed, score in enumerate(values)
    ]
    summary = RunSummary("e", "score", "max", 1.0, trials=trials, seeds=[0, 1, 2])
    ranked = summary.configurations()
    assert [c.params["x"] for c in ranked] == [2, 3, 1]
    assert [c.complete for c in ranked] == [True, True, False] and ranked[2].scored == 1
    assert summary.best is not None and summary.best.params["x"] == 2
    assert summary.to_json()["best"]["params"]["x"] == 2
    exp = ExperimentResults(
        summary=summary, folder=Path("e"), searched=["x", "seed"], scheduler="fifo", stop={},
        history={t.trial_id: [] for t in trials},
    )  # fmt: skip
    text = analyze.render([exp], "table")
    # x=3 (12, 0, 0) outdoes x=2 (5, 5, 5) when two of its three resampled seeds are the 12: 7/27,
    # so x=2 is best in 20/27 of the draws; 75% of the 2,000 drawn here.
    shown = "best: x=2: score = 5 (mean of 3 seeds, P(best) 75%); its best trial aaaaa_00003"
    assert shown in text
    assert analyze.configuration_cells(exp)[2]["seeds"] == "1 of 3 scored, 2 failed"
    header = report._best(exp)
    assert header is not None and header.params == "x = 2" and header.score == "5"


def test_best_and_evaluate_mark_a_score_a_scheduler_cut_short():
    """ASHA stopped x=2's seeds at iteration 2 and one of x=3's at 4, of 8: their tuning scores
    say so beside evaluate's full-length evaluation, as `analyze` marks them."""
    from tune_app.readback import best
    from tune_app.rundir.read import ExperimentResults
    from tune_app.rundir.records import FINISHED, RunSummary, TrialOutcome

    ran = {1: [8, 8], 2: [2, 2], 3: [8, 4]}
    trials = [
        TrialOutcome(
            trial_id=f"aaaaa_{2 * x + seed:05d}", status=FINISHED, config={"x": x, "seed": seed},
            score=float(x), iterations=n, params={"x": x, "seed": seed}, stopped_early=n < 8,
        )
        for x, budgets in ran.items()
        for seed, n in enumerate(budgets)
    ]  # fmt: skip
    summary = RunSummary("e", "loss", "min", 1.0, trials=trials, seeds=[0, 1])
    exp = ExperimentResults(
        summary=summary, folder=Path("e"), searched=["x", "seed"], scheduler="asha", stop={},
        history={t.trial_id: [] for t in trials},
    )  # fmt: skip
    judged = [b.judged for b in best._top(exp, 3)]
    assert judged[0] == "mean of its seeds, P(best) 100%"
    assert judged[1].endswith("P(best) 0%, stopped at 2 of 8 iterations")
    assert judged[2].endswith("P(best) 0%, mixed budgets: 4-8 iterations")


@pytest.mark.parametrize("several", [False, True], ids=["one-experiment", "several"])
def test_an_evaluate_cut_short_prints_no_table_but_where_its_parts_are_once_resumed(
    several, capsys
):
    """Cut short, a run of one experiment returns, of several raises; `resume` of it prints no
    evaluation table: the interrupted evaluate says what gives its parts, before `main`'s
    resume line."""
    from tune_app.api import Interrupted
    from tune_app.cli.printing import evaluated

    def run():
        if several:
            raise Interrupted(["o/e-top1", "o/e-top2"])
        return SimpleNamespace(interrupted_folders=["o/e-best"], address=None)

    with pytest.raises(Interrupted) as raised:
        evaluated(run, [], Path("spec-evaluate.yaml"))
    assert raised.value.folders == (["o/e-top1", "o/e-top2"] if several else ["o/e-best"])
    out, err = capsys.readouterr()
    assert "evaluation on fresh seeds" not in out
    assert "python -m tune_app analyze FOLDER" in err and "spec-evaluate.yaml" in err


@pytest.mark.parametrize("quiet", [False, True], ids=["normal", "quiet"])
@pytest.mark.parametrize("refused_before_plan", [False, True], ids=["planned", "refused"])
def test_evaluate_says_where_its_results_go_and_keeps_no_spec_a_refused_run_never_ran(
    quiet, refused_before_plan, tmp_path, monkeypatch, capsys
):
    """Once its plan passed its checks, `evaluate` prints run's results line (not with -q); a run
    refused before that (a bad --storage-path) leaves no spec file of it behind."""
    from tune_app import api
    from tune_app.cli import printing
    from tune_app.cli.reading import cmd_evaluate
    from tune_app.errors import SpecError
    from tune_app.readback import best

    spec_file = tmp_path / "e.yaml"
    found = [SimpleNamespace(run=None, rank=1)]
    monkeypatch.setattr(best, "best_spec", lambda *a, **k: ({}, found))
    monkeypatch.setattr(best, "render", lambda *a: "")
    monkeypatch.setattr(best, "evaluation_home", lambda run: (spec_file, "o", None))
    said = []
    monkeypatch.setattr(printing, "print_plan_start", lambda plan: said.append("start"))
    monkeypatch.setattr(printing, "print_plan_warnings", lambda plan: said.append("warnings"))

    def run(spec_file, on_plan, **kw):
        if not refused_before_plan:
            on_plan("the plan")
        raise SpecError("refused", path="--storage-path")

    monkeypatch.setattr(api, "run", run)
    args = SimpleNamespace(
        dir="o/e", seeds=2, top=3, quiet=quiet, storage_path=None, address=None, argv=[]
    )
    with pytest.raises(SpecError):
        cmd_evaluate(args)
    assert said == ([] if refused_before_plan else ["warnings" if quiet else "start"])
    assert spec_file.exists() is not refused_before_plan
    assert "the top 1 configuration (3 asked: the run has no more)" in capsys.readouterr().out


def plan_of(tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return make_plan(spec.load(path), cpus=2, storage_path=str(tmp_path / "o"))


def test_seeds_multiply_the_trials_and_show_in_validate(tmp_path, cli):
    text = """
experiments:
  e:
    run: es_cartpole
    seeds: 3
    config: {lr: {grid_search: [0.1, 0.2]}}
"""
    (ep,) = plan_of(tmp_path, text).experiments
    assert ep.trials == 6 and ep.experiment.seeds == (0, 1, 2)
    assert "seed" in ep.searched
    shown = cli("validate", tmp_path / "spec.yaml").out
    assert "6 (2 configurations x 3 seeds" in shown


@pytest.mark.parametrize(
    ("experiment", "message"),
    [
        ("{run: my_func, seeds: 2, config: {alpha: 1}}", "takes no 'seed' config key"),
        ("{run: es_cartpole, seeds: 2, config: {seed: 1}}", "config.seed is set by the seeds"),
        ("{run: es_cartpole, seeds: [1, 1]}", "seeds must differ"),
        ("{run: es_cartpole, seeds: 0}", "seeds is a count"),
        ("{run: es_cartpole, seeds: three}", "seeds is a count"),
        ("{run: es_cartpole, seeds: [-1, 2]}", r"seeds are 0 to 2\*\*32 - 1"),
        ("{run: es_cartpole, seeds: [1, 4294967296]}", r"seeds are 0 to 2\*\*32 - 1"),
        ("{run: es_cartpole, seed: -5}", "seed: input should be greater than or equal to 0"),
        ("{run: es_cartpole, seed: 4294967296}", "seed: input should be less than 4294967296"),
        ("{run: es_cartpole, select: lcb}", "experiment 'e' has no seeds"),
        ("{run: es_cartpole, seeds: 1, select: lcb}", "a bound over one seed is no bound"),
        (
            "{run: es_cartpole, seeds: 2, num_samples: 2, config: {lr: {grid_search: [1, 2]}}}",
            "repeats every grid configuration on the same seeds",
        ),
        (
            "{run: es_cartpole, seeds: 2, search: bohb, config: {lr: {uniform: [0.1, 1]}}}",
            "cannot judge a configuration by several seeds",
        ),
        (
            "{run: es_cartpole, seeds: 2, "
            "scheduler: {type: pbt, hyperparam_mutations: {lr: [0.1, 0.2]}}}",
            "copies single trials",
        ),
    ],
)
def test_bad_seeds_are_refused(tmp_path, experiment, message):
    with pytest.raises(SpecError, match=message):
        plan_of(tmp_path, f"experiments:\n  e: {experiment}\n")


@pytest.mark.parametrize(
    ("settings", "experiment", "path", "has"),
    [
        pytest.param("select: lcb\n", "", "select", "has no seeds", id="no-seeds"),
        # A bound over one seed is that seed's score: the reported run ranked by "its lcb -".
        pytest.param("select: lcb\n", "seeds: 1, ", "select", "has one seed (0)", id="seeds-1"),
        pytest.param(
            "seeds: [7]\n", "select: lcb, ", "experiments.e.select", "has one seed (7)", id="list"
        ),
    ],
)
def test_select_lcb_over_fewer_than_two_seeds_is_refused_at_validate_in_one_line(
    tmp_path, cli, settings, experiment, path, has
):
    (tmp_path / "spec.yaml").write_text(
        f"{settings}experiments:\n  e: {{run: es_cartpole, {experiment}config: {{lr: 0.1}}}}\n"
    )
    refused(
        cli("validate", tmp_path / "spec.yaml"),
        f"{tmp_path / 'spec.yaml'}: {path}: lcb ranks configurations",
        f"experiment 'e' {has}",
        "allowed: aggregate, lcb (with 2 or more seeds)",
        "write seeds: 5",
        "or select: aggregate",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]  # nothing written


def test_select_lcb_over_two_seeds_is_a_bound(tmp_path):
    text = "select: lcb\nexperiments:\n  e: {run: es_cartpole, seeds: [3, 4]}\n"
    (ep,) = plan_of(tmp_path, text).experiments
    assert ep.experiment.select == "lcb" and ep.experiment.seeds == (3, 4)


GRID = """
metric: score
mode: max
experiments:
  lottery:
    run: seeded:train
    seeds: 3
    config: {x: {grid_search: [1, 2]}}
    expect: {score: {min: 4.5}}
"""


@pytest.fixture(scope="module")
def seeded_run(ray_session, tmp_path_factory):
    from tune_app.cli import main

    folder = tmp_path_factory.mktemp("seeds")
    user_module("seeded.py", folder)
    (folder / "spec.yaml").write_text(GRID)
    code = main(["run", str(folder / "spec.yaml"), "--storage-path", str(folder / "o"), "-q"])
    return code, folder


def test_a_configuration_is_judged_by_its_seeds_not_its_luckiest_trial(seeded_run, cli):
    code, folder = seeded_run
    assert code == 0  # expect: the best configuration's mean is 5 (its luckiest trial, 10)
    summary = json.loads((folder / "o" / "lottery" / "summary.json").read_text())
    assert summary["best"]["params"]["x"] == 2  # its best trial, not the luckiest (x=1)
    top, other = summary["configurations"]
    assert top["params"] == {"x": 2} and top["score"] == 5.0
    assert other["params"] == {"x": 1} and other["score"] == pytest.approx(10 / 3)
    assert sorted(top["seeds"]) == [0, 1, 2]
    low, high = other["interval"]
    assert low < 10 / 3 < high
    # x=1 (10, 0, 0) outdoes x=2 (5 on every seed) when two of three resampled seeds are its 10:
    # 7 draws in 27.
    assert top["chance_best"] == pytest.approx(20 / 27, abs=0.04)
    assert other["chance_best"] == pytest.approx(1 - top["chance_best"])
    assert top["bound"] == 5.0 and summary["select"] == "aggregate"
    shown = json.loads(cli("analyze", folder / "o", "--format", "json").out)[0]
    assert shown["configurations"][0]["params"] == {"x": 2} and shown["aggregate"] == "mean"
    assert "configurations over 3 seeds" in cli("analyze", folder / "o").out
    assert cli("report", folder / "o" / "lottery").code == 0
    html = (folder / "o" / "lottery" / "report.html").read_text()
    assert "Configurations over seeds" in html and "x=2" in html


def test_best_takes_the_best_configuration_over_seeds(seeded_run, cli):
    _, folder = seeded_run
    data = yaml.safe_load(cli("best", folder / "o" / "lottery").out)
    exp = data["experiments"]["lottery-best"]
    assert exp["config"] == {"x": 2} and "seeds" not in exp
    again = yaml.safe_load(cli("best", folder / "o", "--seeds", "2").out)
    assert again["experiments"]["lottery-best"]["seeds"] == [10000, 10001]


@pytest.mark.slow  # evaluate end to end; the first tier checks the spec it writes
def test_evaluate_reruns_the_top_configurations_on_fresh_seeds(seeded_run, cli):
    _, folder = seeded_run
    result = cli("evaluate", folder / "o" / "lottery", "--top", "2", "--seeds", "2", "-q")
    # The spec's expect (score >= 4.5) holds for x=2 and fails for x=1 on the fresh seeds.
    assert result.code == 1
    assert "[lottery-top2] expectation failed: score >= 4.5" in result.err
    assert "lottery-top1" not in result.err
    assert (folder / "spec-evaluate.yaml").exists()
    record = json.loads((folder / "o" / "lottery-top1" / "run.json").read_text())
    assert record["command"][1:3] == ["evaluate", str(folder / "o" / "lottery")]  # not the API
    evaluated = {}
    for name in ("lottery-top1", "lottery-top2"):
        summary = json.loads((folder / "o" / name / "summary.json").read_text())
        (config,) = summary["configurations"]
        assert sorted(config["seeds"]) == [10000, 10001]
        evaluated[name] = config
    top1 = json.loads((folder / "o" / "lottery-top1" / "summary.json").read_text())
    assert {t["config"]["x"] for t in top1["trials"]} == {2}  # a constant now, not searched
    assert evaluated["lottery-top1"]["score"] == 5.0
    assert evaluated["lottery-top2"]["score"] == 0.0  # x=1 on seeds 10000, 10001: 0 and 0
    assert "evaluation on fresh seeds" in result.out and "lottery-top2: x=1" in result.out
    assert "(range of 2 seeds)" in result.out and "95%" not in result.out  # 2 seeds: no bootstrap


def test_a_model_based_searcher_repeats_each_configuration_on_every_seed(
    ray_session, cli, tmp_path
):
    user_module("quadratic.py", tmp_path)
    (tmp_path / "spec.yaml").write_text("""
metric: score
mode: max
seed: 1
search: {type: optuna, sampler: random}
experiments:
  e:
    run: quadratic:train
    num_samples: 2
    seeds: [7, 8]
    aggregate: median
    config: {x: {uniform: [0, 1]}, y: {uniform: [0, 1]}}
""")
    assert cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o", "-q").code == 0
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    assert len(summary["trials"]) == 4 and summary["aggregate"] == "median"
    configurations = summary["configurations"]
    assert len(configurations) == 2
    for c in configurations:
        assert sorted(c["seeds"]) == [7, 8]


def test_random_search_runs_each_sampled_configuration_on_every_seed(tmp_path):
    """Each seed ran a configuration of its own when the seeds were a grid axis: Tune draws
    sampled values anew for every grid cell."""
    from ray.tune.experiment import Experiment

    from tune_app import tuner

    (ep,) = plan_of(
        tmp_path,
        """
search: random
seed: 0
experiments:
  e:
    run: es_cartpole
    num_samples: 2
    seeds: 3
    config: {lr: {loguniform: [0.01, 0.5]}, sigma: {grid_search: [0.05, 0.1]}}
""",
    ).experiments
    generator = tuner._searcher(ep)
    space = tuner.param_space(ep, None)
    generator.add_configurations([Experiment("e", lambda c: None, config=space, num_samples=2)])
    configs = []
    while (trial := generator.next_trial()) is not None:
        configs.append(trial.config)
    assert len(configs) == ep.trials == 12
    seeds_of: dict[tuple[float, float], list[int]] = {}
    for c in configs:
        seeds_of.setdefault((c["lr"], c["sigma"]), []).append(c["seed"])
    assert len(seeds_of) == 4  # 2 draws of lr x 2 sigmas, each on seeds 0, 1, 2
    assert all(sorted(s) == [0, 1, 2] for s in seeds_of.values())
    # a configuration's seeds are made one after another (as a grid axis, the seed varied
    # slowest: every first seed ran before any second one)
    assert [c["seed"] for c in configs] == [0, 1, 2] * 4
    assert all(len({(c["lr"], c["sigma"]) for c in configs[i : i + 3]}) == 1 for i in (0, 3, 6, 9))
    assert generator.total_samples == 12


@pytest.mark.parametrize(
    ("ends", "told"),
    [
        (["ok", "ok", "err"], ({"score": 11.0}, False)),
        (["err", "ok", "ok"], ({"score": 11.0}, False)),
        (["err", "err", "err"], (None, True)),
        (["ok", "ok", "stopped"], ({"score": 32 / 3}, False)),  # 10, 12 and its latest, 10
    ],
)
def test_the_searcher_learns_a_configuration_whichever_seed_ends_last(ends, told):
    """Tune passes the ending trial's `error`: a configuration with a scoring seed is not a
    failure (Optuna and HyperOpt drop a failed trial's value), whatever order seeds end in."""
    import math

    from ray.tune.search import Searcher

    from tune_app.ray_internals.seeded import SeedRepeater

    class Inner(Searcher):
        def __init__(self):
            super().__init__(metric="score", mode="max")
            self.told = []

        def suggest(self, trial_id):
            return {"x": 1.0}

        def on_trial_complete(self, trial_id, result=None, error=False):
            self.told.append((result, error))

    inner = Inner()
    repeater = SeedRepeater(inner, [0, 1, 2], "mean")
    assert [repeater.suggest(f"t{i}")["seed"] for i in range(3)] == [0, 1, 2]
    scores = iter([10.0, 12.0])
    for i, end in enumerate(ends):
        if end == "ok":
            repeater.on_trial_complete(f"t{i}", result={"score": next(scores)})
        elif end == "stopped":  # stopped while paused (HyperBand): Tune passes no result
            repeater.on_trial_result(f"t{i}", {"score": 10.0})
            repeater.on_trial_complete(f"t{i}")
        else:
            repeater.on_trial_complete(f"t{i}", error=True)
    ((result, error),) = inner.told
    assert error is told[1]
    if told[0] is None:
        assert math.isnan(result["score"])
    else:
        assert result == told[0]


def judged_by_seeds(**how):
    """JudgesBySeeds around a FIFO scheduler, and the (trial id, score) that scheduler is handed."""
    from ray.tune.schedulers import FIFOScheduler

    from tune_app.ray_internals.seeded import JudgesBySeeds

    seen: list[tuple[str, float]] = []

    class Recorder(FIFOScheduler):
        def on_trial_result(self, tune_controller, trial, result):
            seen.append((trial.trial_id, result["score"]))
            return FIFOScheduler.CONTINUE

    recorder = Recorder()
    recorder.set_search_properties("score", "max")
    return JudgesBySeeds(recorder, **how), seen


def test_an_early_stopping_scheduler_sees_the_configurations_aggregate():
    from tune_app import methods
    from tune_app.ray_internals.seeded import SeededASHA

    probe, seen = judged_by_seeds(how="mean")  # around the scheduler, as every seeded one is
    a0, a1, b0 = seed_trial("a0", 1, 0), seed_trial("a1", 1, 1), seed_trial("b0", 2, 0)
    probe.on_trial_result(None, a0, {"score": 10.0})
    probe.on_trial_result(None, b0, {"score": 5.0})
    probe.on_trial_result(None, a1, {"score": 0.0})  # x=1 so far: 10 and 0
    probe.on_trial_result(None, a0, {"score": 12.0})  # a0's latest replaces its earlier
    assert seen == [("a0", 10.0), ("b0", 5.0), ("a1", 5.0), ("a0", 6.0)]
    entry = methods.SCHEDULERS["asha"]
    built = entry.build(entry.options.model_validate({}), methods.Context(seeds_aggregate="iqm"))
    assert isinstance(built, SeededASHA) and built.how == "iqm"


def seed_trial(name, x, seed):
    return stand_in(name, x, seed=seed)


def test_asha_stops_a_configurations_seeds_together():
    """Once one seed of a configuration is cut, its siblings stop at their next result, so the
    seeds of a configuration are never split between kept and stopped."""
    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(time_attr="training_iteration", max_t=4, grace_period=1, reduction_factor=2)
    asha.set_search_properties("score", "max")
    b0, b1, a0, a1 = (
        seed_trial(*t) for t in [("b0", 2, 0), ("b1", 2, 1), ("a0", 1, 0), ("a1", 1, 1)]
    )
    for t in (b0, b1, a0, a1):
        asha.on_trial_add(None, t)
    at = [
        asha.on_trial_result(None, t, {"training_iteration": 1, "score": v})
        for t, v in [(b0, 5.0), (b1, 5.0), (a0, 0.0)]
    ]
    assert at == ["CONTINUE", "CONTINUE", "STOP"]
    # a1 alone would pass (20 > 5); its configuration was cut, so it stops with its sibling
    assert asha.on_trial_result(None, a1, {"training_iteration": 1, "score": 20.0}) == "STOP"
    # a seed reaching max_t is not an early stop: its siblings go on to max_t too
    assert asha.on_trial_result(None, b0, {"training_iteration": 4, "score": 6.0}) == "STOP"
    assert asha.on_trial_result(None, b1, {"training_iteration": 2, "score": 6.0}) == "CONTINUE"


def test_a_seed_that_is_ahead_counts_with_its_value_at_the_same_time():
    probe, seen = judged_by_seeds()
    a0, a1 = seed_trial("a0", 1, 0), seed_trial("a1", 1, 1)
    for it, v in [(1, 0.0), (2, 0.0), (3, 30.0)]:
        probe.on_trial_result(None, a0, {"training_iteration": it, "score": v})
    probe.on_trial_result(None, a1, {"training_iteration": 1, "score": 10.0})
    # at iteration 1: mean(0, 10), not mean(30, 10)
    assert seen == [("a0", 0.0), ("a0", 0.0), ("a0", 30.0), ("a1", 5.0)]


def test_a_finished_seed_is_recorded_by_its_configurations_aggregate():
    """ASHA and the median rule keep a finished trial's last result for later comparisons: the
    aggregate, not the one seed's raw value among aggregates."""
    from tune_app.ray_internals.seeded import SeededMedian

    rule = SeededMedian(time_attr="training_iteration", grace_period=0, min_samples_required=1)
    rule.set_search_properties("score", "max")
    a0, a1 = seed_trial("a0", 1, 0), seed_trial("a1", 1, 1)
    live = SimpleNamespace(get_live_trials=lambda: [a0, a1])
    for t in (a0, a1):
        rule.on_trial_add(live, t)
    rule.on_trial_result(live, a0, {"training_iteration": 1, "score": 0.0, "time_total_s": 1})
    rule.on_trial_result(live, a1, {"training_iteration": 1, "score": 10.0, "time_total_s": 1})
    rule.on_trial_complete(live, a0, {"training_iteration": 1, "score": 0.0, "time_total_s": 1})
    assert rule._results[a0][-1]["score"] == 5.0  # mean(0, 10)


def test_hyperband_judges_a_rung_on_all_seeds_there_and_keeps_them_together():
    """The first seed at a rung was given the aggregate known then (its value alone); before
    halving, each is judged again on its configuration's seeds at the rung, and the kept share
    takes whole configurations."""
    from ray.tune.experiment import Trial

    from tune_app.ray_internals.seeded import SeededHyperBand

    band = SeededHyperBand(time_attr="training_iteration", max_t=3, reduction_factor=3)
    band.set_search_properties("score", "max")
    fillers = [seed_trial(f"f{i}", 8 + i, 0) for i in range(2)]  # the first bracket: 2 to 3
    a0, b0, a1 = seed_trial("a0", 1, 0), seed_trial("b0", 2, 0), seed_trial("a1", 1, 1)
    for t in (*fillers, a0, b0, a1):
        band.on_trial_add(None, t)  # a0, b0, a1: 3 trials, the best third kept after 1
    controller = Controller(band)
    for t, v in [(a0, 0.0), (b0, 5.0)]:
        t.status = Trial.RUNNING
        assert band.on_trial_result(controller, t, {"training_iteration": 1, "score": v}) == "PAUSE"
        t.status = Trial.PAUSED
    a1.status = Trial.RUNNING
    # configuration x=1 at the rung: mean(0, 20) = 10 against x=2's 5. Judged on arrival, a0
    # (0) would be cut with b0 and a1 kept alone.
    assert (
        band.on_trial_result(controller, a1, {"training_iteration": 1, "score": 20.0}) == "CONTINUE"
    )
    assert controller.stopped == ["b0"]
    assert a0.status == Trial.PAUSED and a0 in band._trial_info[a0][0].trials_to_unpause


def test_hyperband_brackets_hold_whole_configurations():
    """Tune's grid makes every configuration's seed 0 before any seed 1 (the seed axis varies
    slowest): each later seed joins its configuration's bracket, and a bracket's size counts
    configurations, so seeds are never judged on different budgets."""
    from tune_app.ray_internals.seeded import SeededHyperBand

    band = SeededHyperBand(time_attr="training_iteration", max_t=3, reduction_factor=3)
    band.set_search_properties("score", "max")
    trials = [seed_trial(f"c{x}s{seed}", x, seed) for seed in (0, 1) for x in range(1, 6)]
    for t in trials:
        band.on_trial_add(None, t)
    bracket_of = {t.trial_id: band._trial_info[t][0] for t in trials}
    for x in range(1, 6):
        assert bracket_of[f"c{x}s0"] is bracket_of[f"c{x}s1"]
    assert bracket_of["c1s0"] is bracket_of["c2s0"]  # the first bracket: 2 configurations
    assert bracket_of["c3s0"] is bracket_of["c5s0"] is not bracket_of["c1s0"]  # then 3


def test_asha_compares_a_configuration_with_the_others_only():
    """Recorded per trial, a configuration's first seed set the bar its second had to clear:
    x=1's seeds 6 and 4 (mean 5) were cut against its own 6. Recorded once per configuration,
    it is measured against x=2's 5 only."""
    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(time_attr="training_iteration", max_t=9, grace_period=1, reduction_factor=3)
    asha.set_search_properties("score", "max")
    b0, a0, a1 = seed_trial("b0", 2, 0), seed_trial("a0", 1, 0), seed_trial("a1", 1, 1)
    for t in (b0, a0, a1):
        asha.on_trial_add(None, t)
    assert asha.bracket_of(a0) is asha.bracket_of(a1)  # seeds share a bracket
    decisions = [
        asha.on_trial_result(None, t, {"training_iteration": 1, "score": v})
        for t, v in [(b0, 5.0), (a0, 6.0), (a1, 4.0)]
    ]
    assert decisions == ["CONTINUE"] * 3
    (rung_one,) = [r for m, r in asha.bracket_of(a0)._rungs if m == 1]
    assert rung_one == {'{"x": 2}': 5.0, '{"x": 1}': 5.0}  # one entry each, the latest mean


def test_asha_puts_a_seed_made_after_its_siblings_ended_in_their_bracket():
    """Under a concurrency limit a configuration's last seed may be made after the others
    ended (Tune then forgets their bracket): it joins theirs, not one drawn anew."""
    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(
        time_attr="training_iteration", max_t=9, grace_period=1, reduction_factor=3, brackets=3
    )
    asha.set_search_properties("score", "max")
    for x in range(10):
        first, last = seed_trial(f"c{x}s0", x, 0), seed_trial(f"c{x}s1", x, 1)
        asha.on_trial_add(None, first)
        home = asha.bracket_of(first)
        asha.on_trial_result(None, first, {"training_iteration": 1, "score": 1.0})
        asha.on_trial_complete(None, first, {"training_iteration": 2, "score": 1.0})
        asha.on_trial_add(None, last)
        assert asha.bracket_of(last) is home


def test_a_cut_configurations_seeds_run_to_its_rung_and_stop_there():
    """Seeds of one configuration end at one budget: a seed behind the one cut at a rung runs
    on to that rung (not stopped at its next result, below it), and a seed arriving at a rung
    its configuration passed is recorded there but not cut, for the seed ahead goes on."""
    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(time_attr="training_iteration", max_t=8, grace_period=2, reduction_factor=2)
    asha.set_search_properties("score", "max")
    a0, a1, b0, b1 = (
        seed_trial(*t) for t in [("a0", 1, 0), ("a1", 1, 1), ("b0", 2, 0), ("b1", 2, 1)]
    )
    for t in (b0, b1, a0, a1):
        asha.on_trial_add(None, t)

    def step(trial, iteration, score):
        return asha.on_trial_result(None, trial, {"training_iteration": iteration, "score": score})

    assert step(b0, 2, 5.0) == "CONTINUE"  # the first at rung 2
    assert step(a1, 1, 0.0) == "CONTINUE"  # below the rung
    assert step(a0, 2, 0.0) == "STOP"  # x=1 (mean 0) cut at rung 2 against x=2's 5
    assert step(a1, 1, 0.0) == "CONTINUE"  # behind: on to the rung its sibling was cut at
    assert step(a1, 2, 9.0) == "STOP"  # there, whatever its own value
    # b1 at rung 2 would be cut by its own mean (5 and -100) against x=1's 0; x=2 passed the
    # rung with b0, which has gone on: b1 goes on too.
    assert step(b1, 2, -100.0) == "CONTINUE"
    assert step(b0, 3, 5.0) == step(b1, 3, 5.0) == "CONTINUE"


def test_a_resumed_asha_run_stops_a_cut_configurations_seeds_at_its_rung():
    """Tune gives a resumed run a new scheduler and adds every trial to it, the ended ones too:
    a seed that ended at a rung short of max_t was cut there, and its siblings still running
    stop there; a seed that ended elsewhere (its trainable ended) stops none."""
    from ray.tune.experiment import Trial

    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(time_attr="training_iteration", max_t=8, grace_period=2, reduction_factor=2)
    asha.set_search_properties("score", "max")
    a0, a1, c0, c1 = (
        seed_trial(*t) for t in [("a0", 1, 0), ("a1", 1, 1), ("c0", 3, 0), ("c1", 3, 1)]
    )
    a0.status, a0.last_result = Trial.TERMINATED, {"training_iteration": 2, "score": 0.0}
    c0.status, c0.last_result = Trial.TERMINATED, {"training_iteration": 3, "score": 1.0}
    for t in (a0, a1, c0, c1):
        asha.on_trial_add(None, t)
    assert asha.on_trial_result(None, a1, {"training_iteration": 1, "score": 50.0}) == "CONTINUE"
    assert asha.on_trial_result(None, a1, {"training_iteration": 2, "score": 50.0}) == "STOP"
    assert asha.on_trial_result(None, c1, {"training_iteration": 3, "score": 1.0}) == "CONTINUE"


def test_a_run_begun_before_budgets_were_kept_resumes():
    """A seeded scheduler pickled when `stopped` was a set of configurations."""
    import pickle

    from tune_app.ray_internals.seeded import SeededASHA

    asha = SeededASHA(time_attr="training_iteration", max_t=8, grace_period=2, reduction_factor=2)
    state = asha.__dict__.copy()
    state["stopped"] = {'{"x": 1}'}
    del state["passed"], state["cut_at"]
    old = SeededASHA.__new__(SeededASHA)
    old.__setstate__(state)
    restored = pickle.loads(pickle.dumps(old))
    assert restored.stopped == {'{"x": 1}': None} and restored.passed == {}


def test_a_seed_count_past_the_bound_is_refused(write_spec, cli, tmp_path):
    """`seeds: 100000000` took 28 s and 10 GB to validate (the list of seeds made whole), and
    `best --seeds 100000000000` ran out of memory."""
    spec = write_spec("e:\n  run: my_func\n  seeds: 100000000\n  config: {alpha: 0.5, beta: 1}\n")
    refused(cli("validate", spec), "e.seeds", "at most 10,000 seeds", "got 100,000,000")
    for count in ("100000000000", "0"):
        refused(cli("best", tmp_path, "--seeds", count), "--seeds", "from 1 to 10,000 seeds")
        refused(cli("evaluate", tmp_path, "--seeds", count), "--seeds", "from 1 to 10,000 seeds")
