"""Statistics over seeds say what they are: under 5 seeds the interval is the seeds' range with
its count, not a "95% bootstrap interval"; a configuration whose seeds a scheduler stopped at
different budgets is marked so in `analyze`, `report` and the summary; one seed's score is not
called an aggregate."""

from __future__ import annotations

from pathlib import Path

from tune_app import seeds
from tune_app.readback import analyze, report
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import FINISHED, RunSummary, TrialOutcome


def _trial(i: int, x: int, seed: int, score: float | None, iterations: int) -> TrialOutcome:
    return TrialOutcome(
        trial_id=f"aaaaa_{i:05d}", status=FINISHED, config={"x": x, "seed": seed}, score=score,
        iterations=iterations, params={"x": x, "seed": seed},
    )  # fmt: skip


def _experiment(trials: list[TrialOutcome], n_seeds: int) -> ExperimentResults:
    summary = RunSummary(
        "e", "score", "max", 1.0, trials=trials, seeds=list(range(n_seeds)), aggregate="iqm"
    )
    return ExperimentResults(
        summary=summary, folder=Path("e"), searched=["x", "seed"], scheduler="asha", stop={},
        history={t.trial_id: [] for t in trials},
    )  # fmt: skip


def test_under_five_seeds_the_interval_is_the_range_and_says_so():
    two = seeds.group([_trial(0, 1, 0, 3.0, 6), _trial(1, 1, 1, 7.0, 6)], "mean")[0]
    assert two.interval == (3.0, 7.0) and two.interval_is_range
    assert two.interval_text() == "[3, 7] (range of 2 seeds)"
    five = seeds.group([_trial(i, 1, i, float(i), 6) for i in range(5)], "mean")[0]
    assert not five.interval_is_range and five.interval_text().endswith("(95% bootstrap)")


def test_mixed_budgets_are_marked_in_analyze_report_and_the_summary(capsys):
    trials = [_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, 0.4, 1), _trial(2, 2, 0, 0.5, 6)]
    trials.append(_trial(3, 2, 1, None, 0))  # never started: not a budget
    exp = _experiment(trials, 2)
    top = exp.summary.configurations()[0]
    assert top.mixed_budgets and top.budgets_text == "mixed budgets: 1-6 iterations"
    assert not exp.summary.configurations()[1].mixed_budgets
    text = analyze.render([exp], "table")
    # x=2 has one scored seed: no chance of its own, so x=1 is best in every draw
    assert "(iqm of 2 seeds, mixed budgets: 1-6 iterations, P(best) 100%)" in text
    assert "[0.4, 0.9] (range of 2 seeds)" in text and "95% bootstrap interval:" not in text
    assert analyze.configuration_cells(exp)[0]["seeds"] == "2, mixed budgets: 1-6 iterations"
    header = report._best(exp)
    assert header is not None and "mixed budgets: 1-6 iterations" in header.scope

    from tune_app.cli.console import print_summaries
    from tune_app.plan.make import make_plan
    from tune_app.spec.resolve import loads

    spec = "e:\n  run: my_func\n  config: {alpha: 1, beta: 1}\n"
    plan = make_plan(loads(spec, Path("s.yaml")), cpus=2)
    print_summaries(plan, [exp.summary], width=200)
    assert "iqm of 2 seeds, mixed budgets: 1-6 iterations" in capsys.readouterr().out


def test_one_seeds_score_is_not_called_an_aggregate():
    exp = _experiment([_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, None, 0)], 2)
    text = analyze.render([exp], "table")
    assert "(1 seed only)" in text and "of 1 seeds" not in text
    header = report._best(exp)
    assert header is not None and header.scope.startswith("1 seed only")


def test_trials_that_never_started_are_no_made_up_configuration():
    started = [_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, 0.7, 6)]
    waiting = [
        TrialOutcome(
            trial_id=f"aaaaa_{i:05d}",
            status="UNFINISHED",
            config={},
            score=None,
            iterations=0,
            params={"x": None, "seed": None},
        )  # fmt: skip
        for i in range(2, 24)
    ]
    exp = _experiment(started + waiting, 2)
    (only,) = exp.summary.configurations()
    assert only.params == {"x": 1}
    text = analyze.render([exp], "table")
    assert "x=-" not in text and "None: -" not in text
    assert "(22 trials never started: no configuration was drawn for them)" in text


def _legend_best(fig) -> list[str]:
    """The trials a figure's legend calls best."""
    labels = [t.get_text() for legend in fig.legends for t in legend.texts]
    return [label.split()[0] for label in labels if "(best" in label]


def _same_best_everywhere(trials: list[TrialOutcome], expected: str) -> None:
    """The report's banner names `expected`, as the best trial, and so does every figure."""
    from tune_app.readback import plots
    from tune_app.readback.plots import parallel

    for t in trials:  # a second parameter, for the parallel coordinates
        t.params["y"] = t.params["x"] * 10
    exp = _experiment(trials, 2)
    exp.searched.append("y")
    exp.summary.aggregate = "mean"
    exp.history.update(
        {t.trial_id: [{"training_iteration": 1.0, "score": t.score}] for t in trials if t.score}
    )
    banner = report._best(exp)
    assert banner is not None and banner.trial_id == expected, banner
    colors = plots.trial_colors(exp)
    for figure in (plots.learning_curves(exp, colors), parallel.parallel_coordinates(exp, colors)):
        assert _legend_best(figure) == [expected]


def test_a_configuration_whose_only_seed_failed_is_not_the_best():
    """An interrupted run of 2 seeds: x=1's only seed to run failed after scoring 0.95, x=2's
    first seed scored 0.6 and its second never ran. A failed seed's score is not the best, as
    in ranking trials: the banner and the plots both name x=2's trial."""
    failed = _trial(0, 1, 0, 0.95, 3)
    failed.status, failed.cause = "ERROR", "ValueError"
    waiting = _trial(2, 2, 1, None, 0)
    waiting.status = "UNFINISHED"
    _same_best_everywhere([failed, _trial(1, 2, 0, 0.6, 3), waiting], "aaaaa_00001")


def test_the_plots_call_best_the_best_configurations_trial():
    """x=3's first seed alone scored 0.9, but its configuration's mean is 0.5; x=2's seeds both
    scored 0.6: x=2's best trial is the best, in the banner and in every figure."""
    trials = [_trial(0, 2, 0, 0.6, 3), _trial(1, 2, 1, 0.6, 3)]
    trials += [_trial(2, 3, 0, 0.9, 3), _trial(3, 3, 1, 0.1, 3)]
    _same_best_everywhere(trials, "aaaaa_00000")
