"""One definition of "best": a trial's score under the spec's scope ranks it in the summary,
expect, analyze, report and TensorBoard alike."""

from __future__ import annotations

import json
import math
import shutil
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_app import scoring, spec

from .conftest import ROOT

VALUES = [2.0, float("nan"), 10.0, None, 3.0, 1.0]


@pytest.mark.parametrize(
    ("scope", "mode", "expected"),
    [
        ("last", "max", 1.0),
        ("all", "max", 10.0),
        ("all", "min", 1.0),
        ("avg", "max", 4.0),
        ("last-2-avg", "max", 2.0),
        ("last-10-avg", "max", 4.0),
    ],
)
def test_score_skips_missing_values(scope, mode, expected):
    assert scoring.score(VALUES, scope, mode) == expected


def test_no_values_no_score():
    assert scoring.score([None, float("inf")], "last", "max") is None


@pytest.mark.parametrize("scope", ["last", "all", "avg", "last-3-avg"])
def test_spec_takes_a_scope_at_either_level(tmp_path, scope):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"scope: {scope}\nexperiments:\n  a: {{run: my_func, config: {{alpha: 1, beta: 1}}}}\n"
        "  b: {run: my_func, scope: all, config: {alpha: 1, beta: 1}}\n"
    )
    a, b = spec.load(path).experiments
    assert (a.scope, b.scope) == (scope, "all")


@pytest.mark.parametrize("scope", ["best", "last-1000000-avg"])
def test_a_bad_scope_names_the_choices(cli, write_spec, scope):
    result = cli(
        "validate",
        write_spec(f"e: {{run: my_func, scope: {scope}, config: {{alpha: 1, beta: 1}}}}"),
    )
    assert result.code == 2
    assert (
        f"e.scope: '{scope}' is not a scope; allowed: last, all, avg, last-N-avg (N" in result.err
    )


SPEC = """
metric: score
mode: max
{scope}
experiments:
  e:
    run: curves:train
    config: {{case: {{grid_search: [spiky, steady]}}}}
"""


@pytest.mark.ray
@pytest.mark.e2e
@pytest.mark.parametrize(
    ("scope_line", "scope", "winner", "score"),
    [("", "last", "steady", 5.0), ("scope: all", "all", "spiky", 10.0)],
)
def test_summary_expect_analyze_and_report_name_the_same_best_trial(
    ray_session, cli, tmp_path, scope_line, scope, winner, score
):
    shutil.copy(ROOT / "tests" / "user_modules" / "curves.py", tmp_path / "curves.py")
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(scope=scope_line))
    out = tmp_path / "out"
    result = cli("run", path, "-q", "--storage-path", out, "--junit", tmp_path / "j.xml")
    assert result.code == 0, result.err
    folder = out / "e"
    assert json.loads((folder / "run.json").read_text())["scope"] == scope
    summary = json.loads((folder / "summary.json").read_text())
    best = summary["best"]
    assert best["config"]["case"] == winner and best["metric"] == score
    analyzed = json.loads(cli("analyze", folder, "--format", "json").out)[0]
    assert analyzed["best"]["trial_id"] == best["trial_id"]
    assert analyzed["best"]["score"] == score
    assert analyzed["trials"][0]["trial_id"] == best["trial_id"]  # ranked first
    table = cli("analyze", folder).out
    assert f"best: {best['trial_id']} score = {score:g}" in table
    assert cli("report", folder).code == 0
    html = (folder / "report.html").read_text()
    assert f"trial <b>{best['trial_id']}</b>, score = <b>{score:g}</b>" in html


def test_equal_scores_rank_in_the_order_the_trials_were_created():
    """A run read back from its files lists trials in another order than the run did; ties must
    not change which trial is best (the API and `best` once named different ones)."""
    from tune_app.rundir.records import RunSummary, TrialOutcome
    from tune_app.seeds import group

    def trial(trial_id, score, gamma, seed=0):
        params = {"nested.gamma": gamma, "seed": seed}
        return TrialOutcome(trial_id, "TERMINATED", {}, score, 2, params=params)

    trials = [trial("e_00002", 6.0, 1), trial("e_00003", 6.0, 2), trial("e_00000", 2.0, 1)]
    trials.append(trial("e_00001", None, 2))
    for mode in ("max", "min"):
        orders = [trials, trials[::-1], trials[1:] + trials[:1]]
        best = {RunSummary("e", "score", mode, 0.0, order).best.trial_id for order in orders}
        ranks = {
            tuple(t.trial_id for t in RunSummary("e", "s", mode, 0.0, o).ranked()) for o in orders
        }
        assert len(best) == 1 and len(ranks) == 1
    assert best == {"e_00000"}  # min: the lowest score; max was e_00002, the earlier of the tie
    assert RunSummary("e", "score", "max", 0.0, trials[::-1]).best.trial_id == "e_00002"
    tied = [trial("e_00004", 5.0, 1, 0), trial("e_00005", 5.0, 2, 0)]
    firsts = {group(order, "mean", "max")[0].params["nested.gamma"] for order in (tied, tied[::-1])}
    assert firsts == {1}


def _by_definition(values, scope, mode):
    """A scope as the docs define it, written out: over the finite numbers (no bool, no text),
    the last, the best ever, the mean, or the mean of the last N; None without any."""
    xs = [v for v in values if type(v) is float and math.isfinite(v)]
    if not xs:
        return None
    if scope == "last":
        return xs[-1]
    if scope == "all":
        return max(xs) if mode == "max" else min(xs)
    window = xs if scope == "avg" else xs[-int(scope.split("-")[1]) :]
    return statistics.fmean(window)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True, width=32),
            st.none(),
            st.booleans(),
            st.text(max_size=2),
        ),
        max_size=30,
    ),
    scope=st.sampled_from(["last", "all", "avg", "last-1-avg", "last-3-avg", "last-10-avg"]),
    mode=st.sampled_from(["max", "min"]),
)
def test_a_running_score_is_the_score_of_every_value_it_took(values, scope, mode):
    """The live view keeps each trial's score as its results arrive, in constant memory; it must
    name what the scope's definition names for the whole list so far, for every scope."""
    running = scoring.RunningScore(scope, mode)
    for n, value in enumerate(values, 1):
        running.add(value)
        expected = _by_definition(values[:n], scope, mode)
        assert running.value == (pytest.approx(expected) if expected is not None else None)
    assert len(running._tail or ()) <= (
        int(scope.split("-")[1]) if scope.startswith("last-") else 0
    )


def test_a_running_score_refuses_an_unknown_scope():
    with pytest.raises(ValueError, match="unknown scope 'best'"):
        scoring.RunningScore("best")


@settings(max_examples=300, deadline=None)
@given(
    results=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=12),
            st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.none()),
        ),
        max_size=40,
    ),
    scope=st.sampled_from(["last", "all", "avg", "last-2-avg"]),
    mode=st.sampled_from(["max", "min"]),
)
def test_a_step_score_is_the_score_of_the_values_before_each_step_that_went_back(
    results, scope, mode
):
    """TensorBoard's HParams score: a step at or under one already taken (a resume, a restore)
    drops the values from there on, as results.jsonl's readers do; the score is `score` of what
    stays, at every result."""
    scored = scoring.StepScore(scope, mode)
    kept: list[tuple[int, float]] = []
    for step, value in results:
        scored.add(step, value)
        kept = [(s, v) for s, v in kept if s < step]
        if scoring.finite(value) is not None:
            kept.append((step, value))
        expected = scoring.score([v for _, v in kept], scope, mode)
        assert scored.value == (pytest.approx(expected) if expected is not None else None)
    assert list(scored.steps) == [s for s, _ in kept]
