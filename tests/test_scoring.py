"""One definition of "best": a trial's score under the spec's scope ranks it in the summary,
expect, analyze, report and TensorBoard alike."""

from __future__ import annotations

import json
import shutil

import pytest

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


def test_a_bad_scope_names_the_choices(cli, write_spec):
    result = cli(
        "validate", write_spec("e: {run: my_func, scope: best, config: {alpha: 1, beta: 1}}")
    )
    assert result.code == 2
    assert "e.scope: 'best' is not a scope; allowed: last, all, avg, last-N-avg" in result.err


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
