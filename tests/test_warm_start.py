"""Warm start (`warm_start: [RUN, ...]`): what a searcher is handed from earlier runs, the checks
at validate, and runs that continue earlier ones on the session's Ray."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tune_app import spec
from tune_app.methods import Context, searcher_of
from tune_app.plan.make import make_plan
from tune_app.plan.types import ExperimentPlan
from tune_app.rundir.files import write_json
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import RunRecord, RunSummary, TrialOutcome, WarmStartRecord
from tune_app.space import Domain, to_tune

from .conftest import refused, results_of, user_module

FINISHED, ERRORED, UNFINISHED = "TERMINATED", "ERROR", "UNFINISHED"


def earlier_run(
    folder: Path,
    trials: list[tuple[str, dict[str, Any], float | None]],
    *,
    metric: str | None = "score",
    mode: str | None = "max",
    searched: tuple[str, ...] = ("x",),
    statuses: dict[str, str] | None = None,
    seeds: list[int] | None = None,
) -> Path:
    """A run folder as a finished run leaves it (run.json, summary.json), of trials (id, config,
    last value of the metric); `statuses` gives some another status than finished."""
    loc = RunLocation(folder)
    folder.mkdir(parents=True)
    record = RunRecord(experiment="e", metric=metric, mode=mode, searched=searched)
    write_json(loc.record, record.to_json())
    outcomes = [
        TrialOutcome(
            trial_id=t,
            status=(statuses or {}).get(t, FINISHED),
            config=config,
            score=value,
            iterations=2,
            last=value,
        )
        for t, config, value in trials
    ]
    summary = RunSummary(
        experiment="e", metric=metric, mode=mode, wall_time_s=1, trials=outcomes, seeds=seeds or []
    )
    write_json(loc.summary, summary.to_json())
    return folder


def spec_text(search: str, config: str, warm: list[Path], extra: str = "") -> str:
    return f"""
metric: score
mode: max
experiments:
  e:
    run: my_trainables:train
    search: {search}
    warm_start: {json.dumps([str(w) for w in warm])}
{extra}
    config:
{config}
"""


@pytest.fixture
def planned(write_spec, tmp_path):
    """The plan of a spec's one experiment (its trainable a module beside it)."""
    user_module("my_trainables.py", tmp_path)

    def plan(text: str) -> ExperimentPlan:
        return make_plan(spec.load(write_spec(text)), cpus=2).experiments[0]

    return plan


# ---- what the searcher is handed ------------------------------------------------------------


def test_optuna_is_handed_the_finished_trials_as_evaluated(planned, tmp_path):
    run = earlier_run(
        tmp_path / "old",
        [
            ("a_00000", {"x": 1.0, "steps": 2}, 2.0),
            ("a_00001", {"x": 2.5, "steps": 2}, 5.0),
            ("a_00002", {"x": 4.0, "steps": 2}, None),  # failed: not handed over
            ("a_00003", {"x": 3.0, "steps": 2}, None),  # never finished
        ],
        statuses={"a_00002": ERRORED, "a_00003": UNFINISHED},
    )
    config = "      x: {uniform: [0, 10]}\n      steps: 2"
    ep = planned(spec_text("optuna", config, [run], "    num_samples: 4"))
    assert ep.warm is not None and ep.warm.how == "evaluated"
    assert ep.warm.points == ({"x": 1.0}, {"x": 2.5})
    assert ep.warm.told == (2.0, 5.0)
    assert ep.warm.runs == (WarmStartRecord(str(run), 2, "evaluated"),)
    assert ep.trials == 4 and ep.warm.samples(4) == 4  # evaluated trials are no trials
    assert ep.warm.line() == (
        f"warm start: 2 trials from {run} (told the searcher as evaluated, not run again)"
    )


def test_with_seeds_a_configuration_is_told_its_seeds_aggregate(planned, tmp_path):
    run = earlier_run(
        tmp_path / "old",
        [
            ("a_00000", {"x": 1, "seed": 0}, 1.0),
            ("a_00001", {"x": 1, "seed": 1}, 2.0),
            ("a_00002", {"x": 1, "seed": 2}, 9.0),
            ("a_00003", {"x": 2, "seed": 0}, 4.0),
        ],
        searched=("x", "seed"),
    )
    config = "      x: {randint: [0, 5]}"
    ep = planned(spec_text("hyperopt", config, [run], "    seeds: 3\n    aggregate: median"))
    assert ep.warm is not None
    assert dict(zip([p["x"] for p in ep.warm.points], ep.warm.told, strict=True)) == {
        1: 2.0,  # the median of 1, 2 and 9
        2: 4.0,
    }
    assert ep.warm.runs[0].trials == 4


def test_a_seeded_run_hands_its_configurations_to_a_run_without_seeds(planned, tmp_path):
    """One lucky seed made its configuration look best, where the earlier run ranked it by the
    mean of its seeds."""
    trials = [("a_00000", {"x": 1, "seed": 0}, 9.0), ("a_00001", {"x": 1, "seed": 1}, -5.0)]
    trials += [("a_00002", {"x": 2, "seed": 0}, 4.0), ("a_00003", {"x": 2, "seed": 1}, 4.0)]
    run = earlier_run(tmp_path / "old", trials, searched=("x", "seed"), seeds=[0, 1])
    ep = planned(spec_text("random", "      x: {randint: [0, 5]}", [run], "    num_samples: 1"))
    assert ep.warm is not None and ep.warm.points == ({"x": 2},)  # mean 4 beats 2
    assert ep.warm.runs[0].trials == 4


def test_the_run_read_is_recorded_not_the_name_given(planned, tmp_path):
    """`results/e` named where a later run `results/e_2` stood beside it: the run read is e_2."""
    first = earlier_run(tmp_path / "results" / "e", [("a_00000", {"x": 1.0}, 1.0)])
    later = earlier_run(tmp_path / "results" / "e_2", [("b_00000", {"x": 2.0}, 2.0)])
    ep = planned(spec_text("optuna", "      x: {uniform: [0, 10]}", [first]))
    assert ep.warm is not None and ep.warm.runs == (WarmStartRecord(str(later), 1, "evaluated"),)
    assert ep.warm.points == ({"x": 2.0},)


def test_a_warm_start_that_hands_over_nothing_says_so(write_spec, tmp_path):
    """An interrupted run whose trials never ended validated as 'warm start: 0 trials' alone."""
    user_module("my_trainables.py", tmp_path)
    cut = {"a_00000": UNFINISHED, "a_00001": ERRORED}
    trials = [("a_00000", {"x": 1.0}, 1.0), ("a_00001", {"x": 2.0}, None)]
    run = earlier_run(tmp_path / "cut", trials, statuses=cut)
    text = spec_text("optuna", "      x: {uniform: [0, 10]}", [run])
    plan = make_plan(spec.load(write_spec(text)), cpus=2)
    assert f"e.warm_start: {run} holds no finished trial with a score to hand over" in "\n".join(
        plan.warnings
    )


def test_random_search_runs_the_best_earlier_configurations_first(planned, tmp_path):
    run = earlier_run(
        tmp_path / "old",
        [(f"a_0000{i}", {"x": float(i)}, float(i)) for i in range(5)],
    )
    ep = planned(spec_text("random", "      x: {uniform: [0, 10]}", [run], "    num_samples: 3"))
    assert ep.warm is not None and ep.warm.how == "first"
    assert ep.warm.points == ({"x": 4.0}, {"x": 3.0}, {"x": 2.0})  # best first, num_samples
    assert ep.warm.told == ()
    assert ep.trials == 3


def test_a_grid_continued_runs_only_the_points_not_yet_run(planned, tmp_path):
    run = earlier_run(
        tmp_path / "old",
        [
            ("a_00000", {"x": 1.0, "y": "a"}, 1.0),  # 1.0 as JSON may give it: grid value 1
            ("a_00001", {"x": 2, "y": "a"}, 2.0),
            ("a_00002", {"x": 3, "y": "b"}, None),  # failed: its point runs again
        ],
        searched=("x", "y"),
        statuses={"a_00002": ERRORED},
    )
    config = "      x: {grid_search: [1, 2, 3]}\n      y: {grid_search: [a, b]}"
    ep = planned(spec_text("grid", config, [run], "    num_samples: 2"))
    assert ep.warm is not None and ep.warm.how == "grid" and ep.warm.grid_points == 6
    left = [(1, "b"), (2, "b"), (3, "a"), (3, "b")]
    assert [(p["x"], p["y"]) for p in ep.warm.points] == [p for p in left for _ in range(2)]
    assert ep.trials == 8 and ep.warm.samples(2) == 8  # each point left, once per sample
    assert ep.warm.runs == (WarmStartRecord(str(run), 2, "grid"),)


def test_a_grid_point_runs_again_when_an_earlier_run_lacked_one_of_its_seeds(planned, tmp_path):
    run = earlier_run(
        tmp_path / "old",
        [("a_00000", {"x": 1, "seed": 0}, 1.0), ("a_00001", {"x": 1, "seed": 1}, 1.0)]
        + [("a_00002", {"x": 2, "seed": 0}, 1.0)],
        searched=("x", "seed"),
    )
    ep = planned(spec_text("grid", "      x: {grid_search: [1, 2]}", [run], "    seeds: 2"))
    assert ep.warm is not None
    assert ep.warm.points == ({"x": 2},)
    assert ep.trials == 2  # one point x two seeds


def test_earlier_points_are_handed_by_index_under_the_searchers_names():
    pytest.importorskip("ray")
    from tune_app.methods.by_index import handed_points

    space = to_tune(
        {
            "opt": {"lr": Domain("loguniform", (1e-4, 1e-1))},
            "act": Domain("choice", ("relu", "tanh")),
            "width": Domain("qrandint", (0, 100, 10)),
            "layers": [Domain("choice", (32, 64)), 8],
        }
    )
    earlier = [{"opt.lr": 0.01, "act": "tanh", "width": 40, "layers[0]": 64}]
    assert handed_points(space, earlier) == [
        {"opt": {"lr": 0.01}, "act": 1, "width": 40, "layers": {"[0]": 1}}
    ]
    flat = handed_points(space, earlier, quantized=True, flat=True)
    assert flat == [{"opt/lr": 0.01, "act": 1, "width": 4, "layers/[0]": 1}]


@pytest.mark.parametrize("search", ["optuna", "hyperopt"])
def test_the_searcher_built_has_seen_the_earlier_trials(search, tmp_path):
    """Optuna's study holds them as complete trials; HyperOpt's trials as done ones, each with
    its score (as a loss: HyperOpt minimises), in the order handed."""
    pytest.importorskip("optuna")
    from tune_app.methods import HyperOptOptions, OptunaOptions

    options = OptunaOptions() if search == "optuna" else HyperOptOptions()
    space = to_tune({"x": Domain("uniform", (0, 10)), "act": Domain("choice", ("a", "b"))})
    folder = RunLocation(tmp_path / "run")
    folder.local.mkdir()
    ctx = Context(
        seed=0,
        folder=folder,
        earlier=({"x": 1.0, "act": "b"}, {"x": 7.0, "act": "a"}),
        told=(3.0, 8.0),
        space=space,
    )
    searcher = searcher_of(options).build(options, ctx)
    assert searcher.set_search_properties("score", "max", space)
    if search == "optuna":
        import optuna

        from tune_app.methods import optuna_study

        study = optuna.load_study(study_name="run", storage=optuna_study.study_storage(folder))
        seen = [(t.params, t.value, t.state.name) for t in study.trials]
        assert seen == [
            ({"x": 1.0, "act": 1}, 3.0, "COMPLETE"),
            ({"x": 7.0, "act": 0}, 8.0, "COMPLETE"),
        ]
    else:
        trials = searcher.searcher.searcher._hpopt_trials  # Tune's HyperOptSearch's Trials
        told = {(t["misc"]["vals"]["x"][0], t["result"]["loss"]) for t in trials.trials}
        assert told == {(1.0, -3.0), (7.0, -8.0)}  # HyperOpt keeps its points last first
    # The run's own first trial is a new one, a value of the space as written.
    suggested = searcher.suggest("t_00000")
    assert 0 <= suggested["x"] <= 10 and suggested["act"] in ("a", "b")


def test_a_resumed_optuna_search_holds_each_earlier_trial_once(tmp_path):
    """Tune sets a resumed run's searcher up again, on the study kept in the run folder: the
    earlier trials go into the study once (Tune's evaluated_rewards added them on every set-up,
    so a resumed study held each twice)."""
    import optuna

    from tune_app.methods import OptunaOptions, optuna_study

    space = to_tune({"x": Domain("uniform", (0, 10))})
    folder = RunLocation(tmp_path / "run")
    folder.local.mkdir()
    ctx = Context(
        seed=0, folder=folder, earlier=({"x": 1.0}, {"x": 7.0}), told=(3.0, 8.0), space=space
    )
    for _ in range(3):  # the run, and two resumes: each builds the searcher and sets it up
        searcher = searcher_of(OptunaOptions()).build(OptunaOptions(), ctx)
        assert searcher.set_search_properties("score", "max", space)
    study = optuna.load_study(study_name="run", storage=optuna_study.study_storage(folder))
    assert sorted((t.params["x"], t.value) for t in study.trials) == [(1.0, 3.0), (7.0, 8.0)]


@pytest.mark.parametrize(
    ("domain", "value", "why"),
    [
        pytest.param(Domain("uniform", (0, 1)), 1.0, None, id="float-upper-bound"),
        pytest.param(Domain("uniform", (0, 1)), 1.5, "outside [0, 1]", id="above"),
        pytest.param(Domain("randint", (0, 10)), 10, "outside [0, 10)", id="randint-upper"),
        pytest.param(Domain("randint", (0, 10)), 2.5, "not a whole number", id="not-whole"),
        pytest.param(Domain("qrandint", (0, 100, 10)), 37, "not a multiple of q = 10", id="q"),
        pytest.param(Domain("choice", (1, "a")), 1.0, None, id="choice-1.0-is-1"),
        pytest.param(Domain("choice", (1, 2)), True, "not one of [1, 2]", id="true-is-not-1"),
        pytest.param(Domain("randn", (0, 1)), -50.0, None, id="normal-unbounded"),
        pytest.param(Domain("loguniform", (1e-3, 1)), "x", "not a finite number", id="text"),
    ],
)
def test_a_domain_says_why_a_value_is_outside_it(domain, value, why):
    assert domain.outside(value) == why


# ---- checked at validate ----------------------------------------------------------------


def test_every_problem_of_every_earlier_run_is_one_line_at_validate(cli, write_spec, tmp_path):
    user_module("my_trainables.py", tmp_path)
    inside = earlier_run(tmp_path / "inside", [("a_00000", {"x": 1.0}, 1.0)])
    outside = earlier_run(
        tmp_path / "outside",
        [("b_00000", {"x": 50.0}, 1.0), ("b_00001", {"y": 1}, 1.0), ("b_00002", {"x": 2}, 1.0)],
    )
    other_metric = earlier_run(tmp_path / "loss", [("c_00000", {"x": 1.0}, 1.0)], metric="loss")
    other_mode = earlier_run(tmp_path / "min", [("d_00000", {"x": 1.0}, 1.0)], mode="min")
    (tmp_path / "not_a_run").mkdir()
    (tmp_path / "not_a_run" / "notes.txt").write_text("hello")
    runs = [inside, tmp_path / "missing", tmp_path / "not_a_run", outside, other_metric]
    runs += [other_mode, "s3://", "file://"]
    spec_file = write_spec(
        spec_text(
            "optuna",
            "      x: {uniform: [0, 10]}",
            runs,
            f"    storage_path: {tmp_path / 'o'}",
        )
    )
    result = cli("validate", spec_file)
    assert result.code == 2
    lines = result.err.strip().splitlines()
    at = f"{spec_file}: experiments.e.warm_start"
    expected = [
        f"{at}[1]: {tmp_path / 'missing'} does not exist",
        f"{at}[2]: {tmp_path / 'not_a_run'}",
        f"{at}[3]: trial b_00000 of {outside}: 'x' = 50.0 is outside [0, 10]",
        f"{at}[3]: trial b_00001 of {outside}: has no value of 'x'",
        f"{at}[4]: {other_metric} is a run of metric loss (max), this experiment's is score (max)",
        f"{at}[5]: {other_mode} is a run of metric score (min), this experiment's is score (max)",
        f"{at}[6]: s3:// names no bucket",
        f"{at}[7]: no run folder given",
    ]
    assert len(lines) == len(expected), result.err
    for line, start in zip(lines, expected, strict=True):
        assert start in line, line
    assert not (tmp_path / "o").exists()  # nothing written


@pytest.mark.parametrize(
    ("config", "trials", "message"),
    [
        pytest.param(
            "      x: {uniform: [0, 10]}",
            [("a_00000", {"x": 1.0}, 1.0)],
            "search grid continues a grid by skipping the grid points the earlier runs ran, "
            "but config has no grid_search axis",
            id="grid-without-axes",
        ),
        pytest.param(
            "      x: {grid_search: [1, 2]}",
            [("a_00000", {"x": 1}, 1.0), ("a_00001", {"x": 2}, 1.0)],
            "every one of the grid's 2 points already ran in the warm-start runs",
            id="nothing-left",
        ),
        pytest.param(
            "      x: {grid_search: [[1, 2], [3]]}",
            [("a_00000", {"x": [1, 2]}, 1.0)],
            "this axis holds lists, mappings or search spaces",
            id="grid-of-lists",
        ),
    ],
)
def test_a_grid_that_cannot_be_continued_is_refused(
    cli, write_spec, tmp_path, config, trials, message
):
    user_module("my_trainables.py", tmp_path)
    run = earlier_run(tmp_path / "old", trials)
    refused(cli("validate", write_spec(spec_text("grid", config, [run]))), message)


# ---- runs that continue earlier ones (the session's Ray) ---------------------------------


def summary_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())


def record_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "run.json").read_text())


GRID = """
metric: score
mode: max
experiments:
  e:
    run: my_trainables:train
    {warm}
    config:
      x: {{grid_search: {xs}}}
      steps: 2
"""


def test_a_grid_continued_from_an_earlier_run_runs_only_its_new_points(
    ray_session, cli, write_spec, tmp_path
):
    user_module("my_trainables.py", tmp_path)
    first = cli(
        "run", write_spec(GRID.format(warm="", xs=[1, 2])), "--storage-path", tmp_path / "a"
    )
    assert first.code == 0, first.err
    earlier = tmp_path / "a" / "e"
    spec_file = write_spec(GRID.format(warm=f"warm_start: [{earlier}]", xs=[1, 2, 3]), "more.yaml")
    result = cli("run", spec_file, "--storage-path", tmp_path / "b", "-q")
    assert result.code == 0, result.err
    summary = summary_of(tmp_path / "b" / "e")
    assert [t["config"]["x"] for t in summary["trials"]] == [3]  # 1 and 2 ran before
    assert summary["counts"] == {"TERMINATED": 1}
    assert record_of(tmp_path / "b" / "e")["warm_start"] == [
        {"run": str(earlier), "trials": 2, "how": "grid"}
    ]
    assert f"warm start: 2 trials from {earlier}" in result.out
    ran = {t["trial_id"] for t in summary["trials"]}
    assert {r["trial_id"] for r in results_of(tmp_path / "b" / "e")} == ran  # no earlier trial's
    # analyze and the report read its trials alone, and say where the others are.
    analyzed = cli("analyze", tmp_path / "b" / "e")
    assert analyzed.code == 0 and f"warm start: 2 trials from {earlier}" in analyzed.out
    data = json.loads(cli("analyze", tmp_path / "b" / "e", "--format", "json").out)
    data = data[0] if isinstance(data, list) else data
    assert [t["trial_id"] for t in data["trials"]] == list(ran)
    assert data["warm_start"] == [{"run": str(earlier), "trials": 2, "how": "grid"}]
    page = tmp_path / "page.html"
    assert cli("report", tmp_path / "b" / "e", "--out", page).code == 0
    assert f"warm start: 2 trials from {earlier}" in page.read_text()


SEARCH = """
metric: score
mode: max
seed: {seed}
experiments:
  e:
    run: my_trainables:train
    search: {search}
    num_samples: {n}
    {warm}
    config:
      x: {{uniform: [0, 10]}}
      steps: 2
"""


@pytest.mark.slow  # an in-process run: the second tier
@pytest.mark.parametrize("search", ["optuna", "hyperopt"])
def test_a_search_continued_is_told_the_earlier_trials_and_runs_only_its_own(
    search, ray_session, cli, write_spec, tmp_path
):
    if search == "optuna":
        pytest.importorskip("optuna")
    user_module("my_trainables.py", tmp_path)
    text = SEARCH.format(seed=1, search=search, n=3, warm="")
    assert cli("run", write_spec(text), "--storage-path", tmp_path / "a", "-q").code == 0
    earlier = tmp_path / "a" / "e"
    text = SEARCH.format(seed=2, search=search, n=2, warm=f"warm_start: [{earlier}]")
    result = cli("run", write_spec(text, "more.yaml"), "--storage-path", tmp_path / "b", "-q")
    assert result.code == 0, result.err
    folder = tmp_path / "b" / "e"
    summary = summary_of(folder)
    assert summary["counts"] == {"TERMINATED": 2}  # its own trials; the earlier 3 not run again
    earlier_ids = {t["trial_id"] for t in summary_of(earlier)["trials"]}
    assert not earlier_ids & {t["trial_id"] for t in summary["trials"]}
    assert record_of(folder)["warm_start"] == [
        {"run": str(earlier), "trials": 3, "how": "evaluated"}
    ]
    assert f"warm start: 3 trials from {earlier} (told the searcher as evaluated" in result.out
    if search == "optuna":  # the study (its journal) holds the 3 told and the 2 run
        import optuna

        from tune_app.methods import optuna_study

        study = optuna.load_study(
            study_name="e", storage=optuna_study.study_storage(RunLocation(folder))
        )
        told = sorted(t["metric"] for t in summary_of(earlier)["trials"])
        values = [t.value for t in study.trials]
        assert len(values) == 5 and sorted(values[:3]) == pytest.approx(told)
