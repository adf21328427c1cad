"""Every reader of a run of several objectives shows each objective and the Pareto front:
`analyze` (table, JSON, CSV) and `report` give each trial its value of each objective, as its
last result in results.jsonl holds it, and the front's mark on exactly the front's trials, the
front first; the report draws the front and each objective's curves, and says no metric is lost.
One real search on the session's Ray; the rest Ray-free."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tune_app.readback.analyze import cell

from .conftest import results_of

# gain = x * step grows with x, cost = x + y too: with y = 0 each x is on the front (more gain
# for more cost); y = 2 costs more for the same gain, so each is dominated by its y = 0 twin.
# cost <= 4.5 leaves x = 3, y = 2 (cost 5) off the front twice over: dominated and broken.
MODULE = """\
from ray import tune


def train(config):
    for step in (1, 2):
        tune.report({"gain": config["x"] * step, "cost": config["x"] + config["y"]})
"""

SPEC = """\
metric: [gain, cost]
mode: [max, min]
experiments:
  pair:
    run: gains:train
    constraints: {cost: {max: 4.5}}
    config: {x: {grid_search: [1, 2, 3]}, y: {grid_search: [0, 2]}}
"""
OBJECTIVES = ("gain", "cost")


@pytest.fixture(scope="module")
def front_run(ray_session, tmp_path_factory) -> Path:
    """The finished run folder of a grid of two objectives: 6 trials, a front of 3."""
    from tune_app.cli import main

    folder = tmp_path_factory.mktemp("readers")
    (folder / "gains.py").write_text(MODULE)
    (folder / "spec.yaml").write_text(SPEC)
    code = main(["run", str(folder / "spec.yaml"), "--storage-path", str(folder / "o"), "-q"])
    assert code == 0
    return folder / "o" / "pair"


@pytest.fixture(scope="module")
def expected(front_run) -> tuple[dict[str, dict], set[str]]:
    """Each trial's last values of the objectives from results.jsonl, and the front's ids (the
    trials of y = 0, read from the configs the rows carry)."""
    rows = results_of(front_run)
    configs = {r["trial_id"]: r["config"] for r in rows if "config" in r}
    last: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: r["training_iteration"]):  # the last row wins
        last[r["trial_id"]] = {name: r[name] for name in OBJECTIVES}
    assert len(last) == 6 and len(rows) == 12  # two results each
    return last, {t for t, c in configs.items() if c["y"] == 0}


def test_analyze_json_gives_each_objective_and_the_front_mark(front_run, cli, expected):
    last, front = expected
    shown = json.loads(cli("analyze", front_run, "--format", "json").out)[0]
    trials = shown["trials"]
    assert len(trials) == 6
    for t in trials:
        assert {name: t[name] for name in OBJECTIVES} == pytest.approx(last[t["trial_id"]])
    assert {t["trial_id"] for t in trials if t["pareto"]} == front
    assert {t["trial_id"] for t in trials[:3]} == front  # the front first
    assert set(shown["pareto"]) == front
    broken = [t["trial_id"] for t in trials if t.get("broken")]
    assert [last[t]["cost"] for t in broken] == [5]


def _table_rows(text: str) -> dict[str, list[str]]:
    """The rich table's rows: trial id -> its cells, in order."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and cells[0]:
            rows[cells[0]] = cells
    return rows


def test_analyze_table_has_each_objectives_column_and_the_front_mark(front_run, cli, expected):
    last, front = expected
    text = cli("analyze", front_run).out
    header = next(line for line in text.splitlines() if "trial" in line and "status" in line)
    names = [c.strip() for c in header.split("┃")[1:-1]]
    assert names == ["trial", "status", "x", "y", "iter", "gain (max)", "cost (min)", "pareto"]
    rows = _table_rows(text)
    assert set(rows) == set(last)
    for trial_id, cells in rows.items():
        assert cells[5:7] == [cell(float(last[trial_id][n])) for n in OBJECTIVES]
        assert (cells[7] == "*") == (trial_id in front)
    assert set(list(rows)[:3]) == front
    assert "pareto front: 3 of 6 trials" in text


def test_analyze_csv_has_each_objective_and_the_front(front_run, cli, expected):
    last, front = expected
    rows = list(csv.DictReader(io.StringIO(cli("analyze", front_run, "--format", "csv").out)))
    assert {r["trial_id"] for r in rows if r["pareto"] == "True"} == front
    for r in rows:
        assert [float(r[n]) for n in OBJECTIVES] == pytest.approx(
            [last[r["trial_id"]][n] for n in OBJECTIVES]
        )


def test_the_report_shows_each_objective_the_front_first_and_no_lost_metric(
    front_run, cli, expected
):
    last, front = expected
    assert cli("report", front_run).code == 0
    html = (front_run / "report.html").read_text()
    assert "No metric is known" not in html and "names no metric" not in html
    assert "objectives gain (max), cost (min)" in html  # the section's line, not "no metric"
    assert "pareto front: 3 of 6 trials" in html
    figures = re.findall(r"pair-([a-z_-]+)\.png", html)
    assert list(dict.fromkeys(figures)) == ["pareto", "curves-gain", "curves-cost", "timeline"]
    table = html[html.index('<table class="trials">') :]
    head = re.findall(r"<th>(.*?)</th>", table[: table.index("</thead>")])
    assert head == [
        "#",
        "trial",
        "status",
        "x",
        "y",
        "iterations",
        "gain (max)",
        "cost (min)",
        "pareto",
        "stopped early",
    ]
    rows = re.findall(r'<tr data-trial="([^"]+)"([^>]*)>(.*?)</tr>', table, re.DOTALL)
    assert len(rows) == 6
    for trial_id, attrs, body in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", body, re.DOTALL)
        assert cells[6:8] == [cell(float(last[trial_id][n])) for n in OBJECTIVES]
        assert (cells[8] == "*") == (trial_id in front), trial_id
        assert ("top" in attrs) == (trial_id in front)
    assert {trial_id for trial_id, _, _ in rows[:3]} == front


# ---- a run without a metric says why (Ray-free) -------------------------------------------------


def test_a_run_without_a_metric_says_so_not_that_its_record_is_lost(tmp_path, cli):
    """A run folder whose run.json is lost is refused before a page is drawn: a page without
    a metric is a run whose spec named none."""
    run = tmp_path / "e"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"experiment": "e", "searched": ["x"]}))
    rows = [
        {"trial_id": f"t_{i}", "training_iteration": 1, "loss": 1.0 / i, "config": {"x": i}}
        for i in (1, 2)
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    journal = [{"trial_id": r["trial_id"], "status": "TERMINATED"} for r in rows]
    (run / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))
    assert cli("report", run).code == 0
    html = (run / "report.html").read_text()
    assert "The spec names no metric: no plots of one." in html
    assert "run.json is lost?" not in html


def test_objectives_and_parameters_named_as_a_readers_own_fields_are_kept_apart(tmp_path, cli):
    """An objective named `score` (or `status`) overwrote the trial's own field of that name in
    `analyze --format json` and `load`, and a CSV had two `score` columns (a searched `best`
    two `best`): a name the reader has is shown under `objective/` (`config/` in the CSV)."""
    from tune_app import api

    run = tmp_path / "e"
    run.mkdir()
    objectives = [{"name": "score", "mode": "max"}, {"name": "status", "mode": "min"}]
    record = {"experiment": "e", "searched": ["best"], "objectives": objectives}
    (run / "run.json").write_text(json.dumps(record))
    rows = [
        {
            "trial_id": f"t_{i}",
            "training_iteration": 1,
            "score": i,
            "status": i,
            "config": {"best": i},
        }
        for i in (1, 2)
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    journal = [{"trial_id": r["trial_id"], "status": "TERMINATED"} for r in rows]
    (run / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))

    trials = json.loads(cli("analyze", run, "--format", "json").out)[0]["trials"]
    assert {t["trial_id"]: (t["status"], t["objective/status"]) for t in trials} == {
        "t_1": ("TERMINATED", 1),
        "t_2": ("TERMINATED", 2),
    }
    assert all(t["score"] is None and t["objective/score"] in (1, 2) for t in trials)
    header = cli("analyze", run, "--format", "csv").out.splitlines()[0].split(",")
    assert len(header) == len(set(header))
    assert {"config/best", "objective/score", "objective/status", "score", "best"} <= set(header)
    table = api.load(run)
    assert list(table["status"]) == ["TERMINATED"] * 2
    assert sorted(table["objective/score"]) == [1, 2]
