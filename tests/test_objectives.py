"""Several objectives: `metric: [a, b]` read and refused where a method needs one metric, the
Pareto front and `--pick` as pure functions, constraints, and one search through Tune."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tune_app.errors import SpecError
from tune_app.objectives import Limit, Objective, objectives_of
from tune_app.rundir import pareto
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import ERRORED, FINISHED, RunSummary, TrialOutcome

from .conftest import refused, user_module

MAX_MIN = (Objective("acc", "max"), Objective("mem", "min"))


@pytest.mark.parametrize(
    ("metric", "mode", "expected"),
    [
        pytest.param("acc", "max", (), id="one-metric"),
        pytest.param(["acc", "mem"], ["max", "min"], MAX_MIN, id="two"),
    ],
)
def test_objectives_are_read_one_mode_each(metric, mode, expected):
    assert objectives_of(metric, mode, "e") == expected


@pytest.mark.parametrize(
    ("metric", "mode", "path", "words"),
    [
        pytest.param(
            ["acc", "mem"], "max", "e.mode", ["one mode for each", "'max'"], id="one-mode"
        ),
        pytest.param(["acc", "mem"], ["max"], "e.mode", ["2 objectives", "['max']"], id="short"),
        pytest.param(["acc", "mem"], None, "e.mode", ["but got none"], id="no-mode"),
        pytest.param(["acc"], ["max"], "e.metric", ["two or more", "metric: acc"], id="list-of-1"),
        pytest.param(["a", "a"], ["max", "min"], "e.metric", ["a more than once"], id="twice"),
        pytest.param("acc", ["max", "min"], "e.mode", ["names one objective"], id="mode-list"),
    ],
)
def test_objectives_that_do_not_pair_are_refused(metric, mode, path, words):
    with pytest.raises(SpecError) as err:
        objectives_of(metric, mode, "e")
    assert err.value.path == path
    for word in words:
        assert word in str(err.value)


def test_a_limit_says_how_a_value_breaks_it_and_by_how_much():
    limit = Limit("mem", max=2000)
    assert limit.broken(1500) is None and limit.excess(1500) == -500
    assert limit.broken(2500) == "mem 2500 > max 2000" and limit.excess(2500) == 500
    assert limit.broken(None) == "mem never reported" and limit.excess(None) > 0
    both = Limit("loss", min=0, max=1)
    assert both.broken(-1) == "loss -1 < min 0" and both.excess(0.5) == -0.5
    assert both.shown() == "0 <= loss <= 1"


POINTS = {
    "small": (0.5, 1000.0),
    "large": (0.9, 3000.0),
    "worse": (0.4, 1500.0),  # dominated by small: less accurate and larger
    "mid": (0.7, 2000.0),
    "mid-too": (0.7, 2000.0),  # equal points are both on the front
}


def test_the_front_is_the_points_no_other_dominates():
    modes = ["max", "min"]
    assert pareto.dominates(POINTS["small"], POINTS["worse"], modes)
    assert not pareto.dominates(POINTS["mid"], POINTS["mid-too"], modes)
    assert pareto.front(POINTS, modes) == ["small", "large", "mid", "mid-too"]
    assert pareto.front(POINTS, ["min", "max"]) == ["large", "worse", "mid", "mid-too"]


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        pytest.param("acc", "large", id="best-accuracy"),
        pytest.param("mem", "small", id="least-memory"),
        pytest.param("mid", "mid", id="a-trial-of-the-front"),
    ],
)
def test_pick_names_one_point_of_the_front(which, expected):
    assert pareto.pick(POINTS, MAX_MIN, which, "--pick") == expected


def test_pick_on_an_empty_front_says_none_is_on_it():
    with pytest.raises(SpecError, match="no trial is on the front"):
        pareto.pick({}, MAX_MIN, "acc", "--pick")  # min() of nothing, a ValueError, before


@pytest.mark.parametrize(
    ("which", "words"),
    [
        pytest.param("worse", ["'worse' is not on the front"], id="dominated"),
        pytest.param("nope", ["neither an objective nor a trial", "acc, mem, small"], id="none"),
        # A trial of the run without a point (a constraint broken, failed): a trial all the same.
        pytest.param("broke", ["'broke' is not on the front (it broke a constraint"], id="off"),
    ],
)
def test_pick_refuses_what_the_front_does_not_hold(which, words):
    with pytest.raises(SpecError) as err:
        pareto.pick(POINTS, MAX_MIN, which, "--pick", trials=[*POINTS, "broke"])
    assert err.value.path == "--pick"
    for word in words:
        assert word in str(err.value)


def _trial(trial_id, acc, mem, status=FINISHED, broken=()):
    return TrialOutcome(
        trial_id=trial_id,
        status=status,
        config={},
        score=None,
        iterations=1,
        objectives={"acc": acc, "mem": mem},
        broken=list(broken),
    )


def test_the_summary_front_leaves_out_failed_unscored_and_constraint_breaking_trials():
    summary = RunSummary(
        experiment="e",
        metric=None,
        mode=None,
        wall_time_s=1.0,
        trials=[
            _trial("a", 0.5, 1000),
            _trial("b", 0.9, 3000, broken=["mem 3000 > max 2500"]),
            _trial("c", 0.95, 900, status=ERRORED),
            _trial("d", None, 800),
            _trial("e", 0.6, 2000),
            _trial("f", 0.4, 1200),  # dominated by a
        ],
        objectives=list(MAX_MIN),
        constraints=[Limit("mem", max=2500)],
    )
    assert summary.pareto() == ["a", "e"]
    assert summary.best is None  # several objectives: the front is the answer
    data = summary.to_json()
    assert data["pareto"] == ["a", "e"]
    assert data["objectives"] == [{"name": "acc", "mode": "max"}, {"name": "mem", "mode": "min"}]
    again = RunSummary.from_json(json.loads(json.dumps(data)))
    assert again.objectives == list(MAX_MIN) and again.constraints == summary.constraints
    assert again.pareto() == ["a", "e"]
    assert again.trials[1].broken == ["mem 3000 > max 2500"]


def test_a_trial_that_broke_a_constraint_is_never_best_of_one_metric():
    trials = [
        TrialOutcome("a", FINISHED, {}, 0.9, 1, broken=["mem 3000 > max 2500"]),
        TrialOutcome("b", FINISHED, {}, 0.5, 1),
    ]
    summary = RunSummary("e", "acc", "max", 1.0, trials=trials)
    assert summary.best is not None and summary.best.trial_id == "b"
    assert [t.trial_id for t in summary.ranked()] == ["b", "a"]
    only = RunSummary("e", "acc", "max", 1.0, trials=trials[:1])
    assert only.best is None


# ---- the spec: forms, validate, refusals -----------------------------------------------------

APP = """\
metric: [acc, mem]
mode: [max, min]
search: {{type: optuna, sampler: nsga2}}
experiments:
  e:
    run: two_objectives:train
    num_samples: 4
    config: {{width: {{uniform: [0, 1]}}}}
{extra}"""

CLASSIC = """\
e:
  run: two_objectives:train
  metric: [accuracy, mem_mb]
  mode: [max, min]
  search: random
  num_samples: 4
  constraints: {mem_mb: {max: 2000}}
  config: {width: {uniform: [0, 1]}}
"""


def test_both_forms_read_several_objectives_and_validate_shows_them(cli, tmp_path):
    from tune_app.spec import load

    user_module("two_objectives.py", tmp_path)
    (tmp_path / "app.yaml").write_text(APP.format(extra="    constraints: {mem: {max: 1}}\n"))
    (tmp_path / "classic.yaml").write_text(CLASSIC)
    app = load(tmp_path / "app.yaml").experiments[0]
    assert app.objectives == MAX_MIN and app.metric is None and app.mode is None
    classic = load(tmp_path / "classic.yaml").experiments[0]
    assert [o.name for o in classic.objectives] == ["accuracy", "mem_mb"]
    assert classic.constraints == (Limit("mem_mb", max=2000),)
    shown = cli("validate", tmp_path / "classic.yaml")
    assert shown.code == 0, shown.err
    assert "objectives accuracy (max), mem_mb (min)" in shown.out
    assert "kept: mem_mb <= 2000" in shown.out
    assert "search random samples without them" in shown.err
    told = cli("validate", tmp_path / "app.yaml")  # nsga2 reads constraints: nothing to say
    assert told.code == 0 and "samples without them" not in told.err


# (extra experiment keys, key path, words): each refusal names what is allowed.
REFUSED = [
    pytest.param(
        "    scheduler: asha\n",
        "experiments.e.scheduler",
        ["scheduler asha stops or copies trials by one metric", "allowed: fifo"],
        id="asha",
    ),
    pytest.param(
        "    scheduler: {type: pbt, perturbation_interval: 2, "
        "hyperparam_mutations: {width: {uniform: [0, 1]}}}\n    search: random\n",
        "experiments.e.scheduler",
        ["scheduler pbt", "allowed: fifo"],
        id="pbt",
    ),
    pytest.param(
        "    search: hyperopt\n",
        "experiments.e.search",
        ["search hyperopt learns from one metric", "allowed: grid, random, optuna"],
        id="hyperopt",
    ),
    pytest.param(
        "    search: {type: optuna, sampler: cmaes}\n",
        "experiments.e.search",
        ["cmaes sampler models one objective", "tpe, nsga2, random, qmc"],
        id="cmaes",
    ),
    pytest.param(
        "    seeds: 2\n    search: random\n",
        "experiments.e.seeds",
        ["judged by one aggregate score", "2 objectives (acc (max), mem (min))"],
        id="seeds",
    ),
    pytest.param(
        "    expect: {acc: {min: 0.5}}\n",
        "experiments.e.expect",
        ["checked on the best trial", "not one best"],
        id="expect",
    ),
    pytest.param(
        "    scope: avg\n",
        "experiments.e.scope",
        ["scope avg", "last values"],
        id="scope",
    ),
    pytest.param(
        "    mode: [max]\n",
        "experiments.e.mode",
        ["one mode for each", "allowed: min, max"],
        id="modes-short",
    ),
]


@pytest.mark.parametrize(("extra", "path", "words"), REFUSED)
def test_a_method_needing_one_metric_is_refused_in_one_line(cli, tmp_path, extra, path, words):
    user_module("two_objectives.py", tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(APP.format(extra=extra))
    refused(cli("run", spec, "--storage-path", tmp_path / "out"), *words, file=spec, path=path)
    assert not (tmp_path / "out").exists()


# ---- through Tune --------------------------------------------------------------------------

RUN = """\
metric: [accuracy, mem_mb]
mode: [max, min]
seed: 3
experiments:
  nsga:
    run: two_objectives:train
    search: {type: optuna, sampler: nsga2}
    num_samples: 6
    constraints: {mem_mb: {max: 2600}}
    config: {width: {uniform: [0, 1]}, steps: 2}
  grid:
    run: two_objectives:train
    config: {width: {grid_search: [0.1, 0.5, 0.9]}}
    constraints: {mem_mb: {max: 2600}}
"""


@pytest.fixture(scope="module")
def front_run(ray_session, tmp_path_factory):
    from tune_app.cli import main

    folder = tmp_path_factory.mktemp("objectives")
    user_module("two_objectives.py", folder)
    (folder / "spec.yaml").write_text(RUN)
    code = main(["run", str(folder / "spec.yaml"), "--storage-path", str(folder / "o"), "-q"])
    return code, folder


def test_optuna_searches_both_objectives_and_is_told_the_constraints(front_run):
    import optuna

    from tune_app.methods import optuna_study

    code, folder = front_run
    assert code == 0
    summary = json.loads((folder / "o" / "nsga" / "summary.json").read_text())
    assert summary["best"] is None and summary["metric"] is None
    assert [t["objectives"].keys() == {"accuracy", "mem_mb"} for t in summary["trials"]] == [
        True
    ] * 6
    study = optuna.load_study(
        study_name="nsga", storage=optuna_study.study_storage(RunLocation(folder / "o" / "nsga"))
    )
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert len(done) == 6
    for t in done:  # the constraint's value as the sampler reads it: <= 0 when kept
        assert t.constraints == {"mem_mb": pytest.approx(t.values[1] - 2600)}


def test_a_grid_of_several_objectives_leaves_the_broken_trial_off_the_front(front_run):
    _, folder = front_run
    summary = json.loads((folder / "o" / "grid" / "summary.json").read_text())
    by_width = {t["params"]["width"]: t for t in summary["trials"]}
    assert by_width[0.9]["broken"] == ["mem_mb 2800 > max 2600"]
    front = {by_width[w]["trial_id"] for w in (0.1, 0.5)}
    assert set(summary["pareto"]) == front


DIVERGING = """\
diverging:
  run: two_objectives:train
  metric: [accuracy, mem_mb]
  mode: [max, min]
  config: {width: 0.05, steps: 3, broken: {grid_search: [none, mem_mb, accuracy]}}
"""


def test_a_non_finite_value_of_any_objective_fails_the_trial_off_the_front(
    ray_session, cli, tmp_path
):
    """With `metric: [a, b]`, b turning -inf at the last step ended TERMINATED, on the front,
    and `best` exported its value of two steps earlier; NaN alike, in either position."""
    user_module("two_objectives.py", tmp_path)
    (tmp_path / "spec.yaml").write_text(DIVERGING)
    run = cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o", "-q")
    assert run.code == 1, run.err  # failed trials
    folder = tmp_path / "o" / "diverging"
    summary = json.loads((folder / "summary.json").read_text())
    by_broken = {t["params"]["broken"]: t for t in summary["trials"]}
    for key, value in (("mem_mb", "-inf"), ("accuracy", "nan")):
        trial = by_broken[key]
        assert trial["status"] == "ERROR", trial
        assert trial["error"] == f"{key} = {value} at iteration 3", trial
    assert by_broken["none"]["status"] == "TERMINATED"
    assert summary["pareto"] == [by_broken["none"]["trial_id"]]
    exported = yaml.safe_load(cli("best", folder).out)  # the classic form, as the spec was
    assert [e["config"]["broken"] for e in exported.values()] == ["none"]


def test_a_searcher_of_several_objectives_is_told_each_ones_latest_number(ray_session):
    from ray.tune.search import Searcher

    from tune_app.ray_internals.sparse import LatestMetric

    class Recorder(Searcher):
        def __init__(self) -> None:
            super().__init__(metric=["acc", "mem"], mode=["max", "min"])
            self.told: list[tuple] = []

        def suggest(self, trial_id):
            return {}

        def on_trial_complete(self, trial_id, result=None, error=False):
            self.told.append((trial_id, None if result is None else (result["acc"], result["mem"])))

    recorder = Recorder()
    searcher = LatestMetric(recorder)
    searcher.on_trial_result("t", {"acc": 0.5, "mem": 10})
    searcher.on_trial_result("t", {"acc": 0.7})  # mem missing: skipped, acc's latest kept
    searcher.on_trial_complete("t", {"acc": "n/a"})
    searcher.on_trial_complete("u", {"acc": 0.1})  # mem never reported: told nothing
    assert recorder.told == [("t", (0.7, 10)), ("u", None)]


def test_analyze_gives_each_trial_its_objectives_by_name_and_its_place_on_the_front(front_run, cli):
    _, folder = front_run
    shown = json.loads(cli("analyze", folder / "o" / "grid", "--format", "json").out)[0]
    by_width = {t["params"]["width"]: t for t in shown["trials"]}
    assert [by_width[w]["pareto"] for w in (0.1, 0.5, 0.9)] == [True, True, False]
    assert by_width[0.9]["broken"] == ["mem_mb 2800 > max 2600"]
    assert by_width[0.5]["mem_mb"] == pytest.approx(2000)
    assert by_width[0.5]["accuracy"] == pytest.approx(0.5 + 0.001)
    assert shown["objectives"] == [
        {"name": "accuracy", "mode": "max"},
        {"name": "mem_mb", "mode": "min"},
    ]
    assert shown["pareto"] == [by_width[0.5]["trial_id"], by_width[0.1]["trial_id"]]
    table = cli("analyze", folder / "o" / "grid").out
    assert "objectives accuracy (max), mem_mb (min)" in table and "pareto" in table
    assert "pareto front: 2 of 3 trials" in table


def test_best_exports_the_front_or_the_point_pick_names(front_run, cli):
    _, folder = front_run
    result = cli("best", folder / "o" / "grid")
    assert result.code == 0, result.err
    exps = yaml.safe_load(result.out)["experiments"]
    assert {k: v["config"]["width"] for k, v in exps.items()} == {
        "grid-front1": 0.5,
        "grid-front2": 0.1,
    }
    picked = yaml.safe_load(cli("best", folder / "o" / "grid", "--pick", "mem_mb").out)
    assert picked["experiments"]["grid-best"]["config"]["width"] == 0.1
    # Values only: each point of the front under the name it runs as; one point, the run's own.
    lines = cli("best", folder / "o" / "grid", "--format", "overrides").out.splitlines()
    assert lines == ["grid-front1.config.width=0.5", "grid-front2.config.width=0.1"]
    one = cli("best", folder / "o" / "grid", "--pick", "mem_mb", "--format", "overrides")
    assert one.out.splitlines() == ["grid.config.width=0.1"]
    words = "--pick: 'loss' is neither an objective nor a trial", "accuracy, mem_mb"
    refused(cli("best", folder / "o" / "grid", "--pick", "loss"), *words)


def test_the_report_draws_the_front_first(front_run, cli):
    _, folder = front_run
    assert cli("report", folder / "o" / "grid").code == 0
    html = (folder / "o" / "grid" / "report.html").read_text()
    assert "grid-pareto.png" in html and "the Pareto front (no other trial" in html
    assert re.findall(r"grid-[a-z-]+\.png", html)[0] == "grid-pareto.png"  # the first figure


def test_the_front_figure_marks_the_constraint_breaker_and_joins_the_front():
    from tune_app.readback.plots.front import pareto_front
    from tune_app.rundir.read import ExperimentResults

    summary = RunSummary(
        "e",
        None,
        None,
        1.0,
        trials=[
            _trial("a", 0.5, 1000),
            _trial("b", 0.9, 3000, broken=["mem 3000 > max 2500"]),
            _trial("e", 0.6, 2000),
            _trial("f", 0.4, 1200),
        ],
        objectives=list(MAX_MIN),
        constraints=[Limit("mem", max=2500)],
    )
    read = ExperimentResults(summary, Path("e"), [], "fifo", {}, {})
    fig = pareto_front(read)
    assert fig is not None
    (ax,) = fig.axes
    (line,) = ax.get_lines()  # the front, joined in order of the first objective
    assert list(line.get_xdata()) == [0.5, 0.6] and list(line.get_ydata()) == [1000, 2000]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["dominated", "broke a constraint", "Pareto front (2)"]


@pytest.mark.parametrize(
    ("sampler", "cls"),
    [
        pytest.param("tpe", "TPESampler", id="tpe"),
        pytest.param("nsga2", "NSGAIISampler", id="nsga2"),
    ],
)
def test_optuna_is_built_holding_the_objectives_and_told_the_constraints(sampler, cls):
    from ray.tune.search.optuna import OptunaSearch

    from tune_app import methods
    from tune_app.ray_internals.constraints import ToldConstraints

    entry = methods.SEARCHERS["optuna"]
    ctx = methods.Context(
        seed=1,
        objectives=("acc", "mem"),
        modes=("max", "min"),
        constraints=(Limit("mem", max=2000),),
    )
    built = entry.build(entry.options.model_validate({"sampler": sampler}), ctx)
    told = built.searcher
    assert isinstance(told, ToldConstraints) and told.limits == ctx.constraints
    optuna_search = told.searcher
    assert isinstance(optuna_search, OptunaSearch)
    assert optuna_search.metric == ["acc", "mem"] and optuna_search.mode == ["max", "min"]
    assert type(optuna_search._sampler).__name__ == cls


def test_a_run_killed_before_its_summary_reads_its_front_from_its_files(front_run, tmp_path):
    import shutil

    from tune_app.rundir.read import read_experiment

    _, folder = front_run
    copy = tmp_path / "grid"
    shutil.copytree(folder / "o" / "grid", copy)
    written = json.loads((copy / "summary.json").read_text())
    (copy / "summary.json").unlink()  # as a killed driver leaves it: run.json and the rows
    read = read_experiment(copy)
    assert read.summary.objectives == [Objective("accuracy", "max"), Objective("mem_mb", "min")]
    assert sorted(read.summary.pareto()) == sorted(written["pareto"])
    broken = [t for t in read.trials if t.broken]
    assert [t.params["width"] for t in broken] == [0.9]


def test_evaluation_seeds_are_refused_for_a_front(front_run, cli):
    _, folder = front_run
    result = cli("best", folder / "o" / "grid", "--seeds", "2")
    refused(result, "--seeds: evaluation seeds judge a configuration by one aggregate score")
    # evaluate's seeds are not an option to leave out (they default to 5): it says what to do.
    said = refused(cli("evaluate", folder / "o" / "grid"), "evaluate judges each configuration")
    assert "--seeds" not in said and "searched several objectives (accuracy, mem_mb)" in said
    assert "exports the front's configurations" in said


def test_validate_shows_the_constraints_of_one_metric_too(cli, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "e:\n  run: my_func\n  stop: {training_iteration: 2}\n  config: {alpha: 0.5, beta: 1}\n"
        "  constraints: {timesteps_total: {min: 1}}\n"
    )
    shown = cli("validate", spec)
    assert shown.code == 0, shown.err
    assert "mean_accuracy (max; a trial ranks by" in shown.out
    assert "; kept: 1 <= timesteps_total" in shown.out
    # grid search draws without them: said once, as a warning, not an error
    assert "e.constraints: search grid samples without them" in shown.err


def test_an_app_form_experiment_overrides_the_files_objectives_either_way():
    from tune_app.spec import loads

    text = """\
metric: [acc, mem]
mode: [max, min]
experiments:
  both: {run: my_func}
  one: {run: my_func, metric: acc, mode: max}
"""
    both, one = loads(text, "spec.yaml").experiments
    assert both.objectives == MAX_MIN and both.metric is None
    assert one.objectives == () and (one.metric, one.mode) == ("acc", "max")
    text = (
        "metric: acc\nmode: max\nexperiments:\n"
        "  e: {run: my_func, metric: [acc, mem], mode: [max, min]}\n"
    )
    (e,) = loads(text, "spec.yaml").experiments
    assert e.objectives == MAX_MIN
    with pytest.raises(SpecError) as err:  # a list of metrics under the file's one mode
        loads("mode: max\nexperiments:\n  e: {run: my_func, metric: [acc, mem]}\n", "spec.yaml")
    assert err.value.path == "experiments.e.mode"


def test_the_summary_table_names_the_objectives_where_one_metric_has_its_score(tmp_path, capsys):
    """A search of several objectives has no one best: its row names the objectives and points
    at the front listed below it, not `-` cells that read as "no metric known"."""
    from tune_app import spec
    from tune_app.cli.console import print_summaries
    from tune_app.plan.make import make_plan

    user_module("two_objectives.py", tmp_path)
    (tmp_path / "app.yaml").write_text(APP.format(extra=""))
    plan = make_plan(spec.load(tmp_path / "app.yaml"), cpus=2)
    summary = RunSummary(
        "e",
        None,
        None,
        1.0,
        trials=[_trial("a", 0.5, 1000), _trial("b", 0.9, 3000), _trial("c", 0.4, 2000)],
        objectives=list(MAX_MIN),
    )
    print_summaries(plan, [summary], width=200)
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("│ e "))
    assert "front of 2" in row and "objectives acc (max), mem (min)" in row, row
    assert "the front's, below" in row
    assert "pareto front: 2 of 3 trials (b, a)" in out  # best first on acc
