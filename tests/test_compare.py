"""`compare RUN RUN`: runs of one metric side by side. Most tests read run folders written here
as the app writes them (run.json, results.jsonl, the journal, summary.json, the spec as run);
one compares a real search of two experiments (FIFO grid and ASHA random) on the session's
Ray."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import tune_app
from tune_app.errors import SpecError
from tune_app.readback import compare_runs

from .conftest import refused, user_module

_OWN = itertools.count(1)
SPEC = "metric: score\nmode: max\nexperiments: {e: {run: t, config: {x: {uniform: [0, 1]}}}}\n"


def make_run(
    folder: Path,
    trials: list[tuple[dict, list[float]]],
    *,
    name: str = "e",
    metric: str = "score",
    mode: str = "max",
    seeds: list[int] | None = None,
    spec: str | None = None,
    start: float = 1000.0,
    select: str | None = None,
) -> Path:
    """A finished run of experiment `name` in `folder`: each trial (its params, the metric
    values it reported, one a second, the trials one after another), scored by its last. Its
    spec as run is `spec`, by default a spec of its own (runs of one spec are one method)."""
    folder.mkdir(parents=True)
    searched = ["x", *(["seed"] if seeds else [])]
    record = {
        "experiment": name,
        "metric": metric,
        "mode": mode,
        "scope": "last",
        "searched": searched,
        "scheduler": "fifo",
        "seeds": seeds or [],
        **({"select": select} if select else {}),
    }
    (folder / "run.json").write_text(json.dumps(record))
    own = f"{SPEC}max_concurrent_trials: {next(_OWN)}\n"  # a value apart: another method
    (folder / "spec.yaml").write_text(spec or own)
    rows, now = [], start
    for i, (params, values) in enumerate(trials):
        for step, value in enumerate(values, 1):
            now += 1.0
            row = {
                "trial_id": f"abcde_{i:05d}",
                "training_iteration": step,
                metric: value,
                "logged_at": now,
            }
            if step == 1:
                row["config"] = params
            rows.append(json.dumps(row) + "\n")
    (folder / "results.jsonl").write_text("".join(rows))
    journal = [{"trial_id": f"abcde_{i:05d}", "status": "TERMINATED"} for i in range(len(trials))]
    (folder / "finished.jsonl").write_text("".join(json.dumps(j) + "\n" for j in journal))
    summary = {"experiment": name, "metric": metric, "mode": mode, "wall_time_s": 1.0}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def seeded(folder: Path, scores: list[float], **options) -> Path:
    """A run of one configuration on as many seeds as `scores`, each seed's trial one step."""
    seeds = list(range(len(scores)))
    trials = [({"x": 1.0, "seed": s}, [v]) for s, v in zip(seeds, scores, strict=True)]
    return make_run(folder, trials, seeds=seeds, **options)


def test_a_clearly_better_run_beats_the_other_almost_surely(tmp_path):
    good = seeded(tmp_path / "good" / "e", [0.90, 0.92, 0.91, 0.93, 0.89])
    bad = seeded(tmp_path / "bad" / "e", [0.50, 0.55, 0.48, 0.52, 0.51])
    found = tune_app.compare(bad, good)
    (better,) = found.improvements
    assert (better.better, better.than) == ("good/e", "bad/e")  # the likelier winner first
    assert better.chance == 1.0 and better.interval == (1.0, 1.0)
    assert better.counts == (5, 5)
    by_label = {r.label: r for r in found.runs}
    run = by_label["good/e"]
    assert run.best == pytest.approx(0.91)  # the seeds' mean
    assert run.seed_scores == (0.90, 0.92, 0.91, 0.93, 0.89)
    assert run.interval is not None and 0.89 <= run.interval[0] < 0.91 < run.interval[1] <= 0.93
    assert "bootstrap of the mean of its best configuration's 5 seeds" in run.interval_words
    assert "P(good/e beats bad/e) = 1.00 [1.00, 1.00] (5 vs 5 scores)" in found.table()


@pytest.mark.parametrize(
    ("mode", "better", "than"),
    [
        pytest.param("max", "a", "b", id="max"),
        pytest.param("min", "b", "a", id="min"),  # lower is better: the other way round
    ],
)
def test_the_probability_of_improvement_is_rliables_with_an_interval(tmp_path, mode, better, than):
    # a beats b in 15 of the 25 pairs (1 > 0; 2 > 0, 1.5; ...; 5 > all five): 0.6.
    a = seeded(tmp_path / "a", [1.0, 2.0, 3.0, 4.0, 5.0], mode=mode)
    b = seeded(tmp_path / "b", [0.0, 1.5, 2.5, 3.5, 4.5], mode=mode)
    (found,) = tune_app.compare(a, b).improvements
    assert (found.better, found.than) == (better, than)
    assert found.chance == pytest.approx(0.6)  # under min, b is lower in those 15 pairs
    low, high = found.interval
    assert 0.0 <= low < found.chance < high <= 1.0
    assert high - low > 0.2  # five seeds each: the interval is wide, and says so


def test_the_best_so_far_steps_against_trials_iterations_and_time(tmp_path):
    # Scored by their last value: 2, then 5, then 4 (which does not beat 5).
    run = make_run(
        tmp_path / "one",
        [({"x": 0.1}, [1.0, 2.0]), ({"x": 0.2}, [5.0]), ({"x": 0.3}, [3.0, 4.0])],
    )
    other = make_run(tmp_path / "two", [({"x": 0.5}, [3.0]), ({"x": 0.6}, [1.0])])
    found = tune_app.compare(run, other)
    one = found.runs[0]
    steps = [(s.trials, s.iterations, s.seconds, s.best) for s in one.curve]
    assert steps == [(1, 2, 1.0, 2.0), (2, 3, 2.0, 5.0), (3, 5, 4.0, 5.0)]
    assert one.best_at("trials", 1) == 2.0 and one.best_at("iterations", 4) == 5.0
    assert one.best_at("trials", 0.5) is None  # before its first trial ended
    assert one.best_at("trials", 4) == 5.0 and one.ended_by("trials", 4)  # its final best
    assert not one.ended_by("trials", 3)
    assert one.unit == "trials" and one.best == 5.0
    # The best of its 3 trials drawn again: never above its best, at least its worst.
    assert one.interval is not None and 2.0 <= one.interval[0] <= one.interval[1] == 5.0
    text = found.table()
    assert "best so far against trials ended (with seeds: configurations):" in text
    assert "best so far against iterations spent" in text
    assert "best so far against wall time" in text
    # Neither run has seeds: no probability, and the note says what would give one.
    assert found.improvements == ()
    assert "no probability of improvement for one, two" in text


def test_under_lcb_the_best_so_far_is_the_configuration_the_summary_chooses(tmp_path):
    """`select: lcb` chooses the configuration with the best bound over its seeds, not the best
    mean: the staircase follows that choice (stepping down when a steadier configuration ends)
    and ends at the best the run's own summary names."""
    seeds = list(range(5))
    shaky = [0.2, 1.0, 1.0, 1.0, 1.0]  # mean 0.84, one bad seed: a low bound
    steady = [0.80, 0.81, 0.80, 0.81, 0.80]  # mean 0.804, bound about 0.80
    trials = [({"x": 1.0, "seed": s}, [v]) for s, v in zip(seeds, shaky, strict=True)]
    trials += [({"x": 2.0, "seed": s}, [v]) for s, v in zip(seeds, steady, strict=True)]
    run = make_run(tmp_path / "lcb" / "e", trials, seeds=seeds, select="lcb")
    other = seeded(tmp_path / "other" / "e", [0.5, 0.6, 0.5, 0.6, 0.5])
    (exp,) = tune_app.read(run)
    chosen = exp.summary.configurations()[0]
    assert chosen.params == {"x": 2.0}  # the run's own choice
    compared = {r.label: r for r in tune_app.compare(run, other).runs}["lcb/e"]
    assert compared.best == pytest.approx(0.804)
    assert [round(s.best, 3) for s in compared.curve] == [0.84, 0.804]
    assert compared.curve[-1].best == pytest.approx(compared.best)


def test_runs_of_one_spec_are_one_method_judged_by_each_runs_best(tmp_path):
    a1 = make_run(tmp_path / "p1" / "e", [({"x": 0.1}, [0.80])], spec=SPEC)
    a2 = make_run(tmp_path / "p2" / "e", [({"x": 0.2}, [0.82])], spec=SPEC)
    other = SPEC.replace("uniform", "loguniform").replace("[0, 1]", "[0.01, 1]")
    b1 = make_run(tmp_path / "p3" / "e", [({"x": 0.1}, [0.50])], spec=other)
    b2 = make_run(tmp_path / "p4" / "e", [({"x": 0.1}, [0.52])], spec=other)
    found = tune_app.compare(a1, a2, b1, b2)
    assert [(m.label, m.scores) for m in found.methods] == [
        ("p1/e + p2/e", (0.80, 0.82)),
        ("p3/e + p4/e", (0.50, 0.52)),
    ]
    assert found.methods[0].basis == "the best of each of its 2 runs"
    (better,) = found.improvements
    assert (better.better, better.chance, better.interval) == ("p1/e + p2/e", 1.0, (1.0, 1.0))
    assert {r.method for r in found.runs[:2]} == {"p1/e + p2/e"}


def test_runs_of_one_spec_apart_from_its_searchers_seed_are_one_method(tmp_path):
    """Replicates of a method differ in `seed` (the advice of the note below), and in comments
    or layout; a `seed` the trainable reads from its config is part of the method."""
    spec = "seed: 0\nmetric: score\nmode: max\nexperiments: {e: {run: t, config: {x: 1}}}\n"
    runs = {
        "p1": spec,
        "p2": spec.replace("seed: 0", "seed: 5") + "# run again\n",
        "p3": spec.replace("{run: t,", "{seed: 9, run: t,").replace("mode: max\n", "mode:  max\n"),
        "p4": spec.replace("config: {x: 1}", "config: {x: 1, seed: 1}"),
        "p5": spec.replace("config: {x: 1}", "config: {x: 1, seed: 2}"),
    }
    found = tune_app.compare(
        *(
            make_run(tmp_path / p / "e", [({"x": 1}, [0.5 + i / 10])], spec=text)
            for i, (p, text) in enumerate(runs.items())
        )
    )
    assert [m.runs for m in found.methods] == [("p1/e", "p2/e", "p3/e"), ("p4/e",), ("p5/e",)]


def test_runs_of_one_spec_that_repeat_one_search_are_said_to(tmp_path):
    """Two runs of a spec with a fixed `seed` repeated one search: their bests, one score
    counted twice (equal but for rounding), made the probability look sure."""
    a1 = make_run(tmp_path / "p1" / "e", [({"x": 0.1}, [0.7720387725381155])], spec=SPEC)
    a2 = make_run(tmp_path / "p2" / "e", [({"x": 0.1}, [0.7720387725381156])], spec=SPEC)
    other = SPEC.replace("uniform", "loguniform").replace("[0, 1]", "[0.01, 1]")
    b1 = make_run(tmp_path / "p3" / "e", [({"x": 0.1}, [0.50])], spec=other)
    b2 = make_run(tmp_path / "p4" / "e", [({"x": 0.1}, [0.52])], spec=other)
    text = tune_app.compare(a1, a2, b1, b2).table()
    assert "p1/e + p2/e: 1 of its 2 runs' bests repeat another's exactly" in text
    assert "note: p3/e + p4/e" not in text  # runs apart


def test_a_run_that_stopped_short_is_marked_apart_from_one_that_finished(tmp_path):
    done = make_run(tmp_path / "done", [({"x": 0.1}, [1.0])])
    cut = make_run(
        tmp_path / "cut", [({"x": 0.1}, [2.0]), ({"x": 0.2}, [3.0]), ({"x": 0.3}, [1.0])]
    )
    summary = json.loads((cut / "summary.json").read_text())
    (cut / "summary.json").write_text(json.dumps({**summary, "interrupted": True}))
    text = tune_app.compare(done, cut).table()
    assert "  *: the run had ended by then; its final best" in text  # done, beyond 1 trial
    assert "  +: the run stopped by then, not finished" not in text  # cut ran the most
    assert "not finished (interrupted or still running): cut" in text
    text = tune_app.compare(cut, make_run(tmp_path / "more", [({"x": 0.1}, [1.0])] * 5)).table()
    assert "  +: the run stopped by then, not finished (interrupted or still running)" in text


@pytest.mark.parametrize(
    ("second", "words"),
    [
        pytest.param({"metric": "loss"}, ["(metric score, mode max)", "(metric loss, mode max)"]),
        pytest.param({"mode": "min"}, ["(metric score, mode max)", "(metric score, mode min)"]),
    ],
)
def test_runs_of_different_metrics_or_modes_are_refused_in_one_line(tmp_path, cli, second, words):
    a = make_run(tmp_path / "a", [({"x": 0.1}, [1.0])])
    b = make_run(tmp_path / "b", [({"x": 0.1}, [1.0])], **second)
    page = tmp_path / "page.html"
    result = cli("compare", a, b, "--html", page)
    line = refused(result, f"with {b} ", *words)
    assert line.startswith(f"error: cannot compare {a} ") and result.out == ""
    assert not page.exists()  # refused before anything is written
    with pytest.raises(SpecError, match="cannot compare"):
        compare_runs.compare([a, b])


def test_one_run_or_the_same_run_twice_is_refused(tmp_path, cli):
    a = make_run(tmp_path / "a", [({"x": 0.1}, [1.0])])
    alone = cli("compare", a)
    assert alone.code == 2 and "compare needs two runs or more" in alone.err
    twice = cli("compare", a, tmp_path / "." / "a")
    assert twice.code == 2 and f"{a} is named twice" in twice.err
    assert f"{a} is named twice" in cli("compare", f"{a}/", a / "run.json").err
    # A folder of runs names its newest: e, then e_2 itself, both read e_2.
    make_run(tmp_path / "e", [({"x": 0.1}, [1.0])])
    later = make_run(tmp_path / "e_2", [({"x": 0.1}, [1.0])], name="e")
    both = cli("compare", tmp_path / "e", later)  # after the line saying which run e read
    assert both.code == 2 and both.err.splitlines()[-1] == (
        f"error: {tmp_path / 'e'} and {later} both read {later}: a folder names its experiment's "
        f"newest run; name a run's run.json (e.g. {tmp_path / 'e'}/run.json) to read that run"
    )


def test_the_page_shows_every_run_and_is_written_whole(tmp_path, cli):
    good = seeded(tmp_path / "good" / "e", [0.90, 0.92, 0.91])
    bad = seeded(tmp_path / "bad" / "e", [0.50, 0.55, 0.48])
    page = tmp_path / "out" / "compare.html"
    result = cli("compare", good, bad, "--html", page)
    assert result.code == 0, result.err
    assert f"tune_app: wrote {page}" in result.err
    assert "P(good/e beats bad/e) = 1.00" in result.out
    html = page.read_text()
    assert 'data-run="good/e"' in html and 'data-run="bad/e"' in html
    assert str(good) in html and str(bad) in html
    assert html.count('<img src="data:image/png;base64,') == 3  # trials, iterations, time
    assert "Probability of improvement" in html and "range of its best configuration" in html
    assert [p.name for p in page.parent.iterdir()] == ["compare.html"]  # no temporary left


def test_a_folder_of_several_runs_reads_the_newest_that_ran_trials_and_says_so(tmp_path, cli):
    make_run(tmp_path / "r" / "e", [({"x": 0.1}, [1.0])])
    newest = make_run(tmp_path / "r" / "e_2", [({"x": 0.1}, [3.0])])
    other = make_run(tmp_path / "s" / "e", [({"x": 0.1}, [2.0])])
    result = cli("compare", tmp_path / "r" / "e", other, "--format", "json")
    assert result.code == 0, result.err
    assert f"reading {newest}" in result.err  # RunLocation.open's line
    data = json.loads(result.out)
    assert [(r["where"], r["best"]) for r in data["runs"]] == [
        (str(newest), 3.0),
        (str(other), 2.0),
    ]


SEARCHES = """
metric: score
mode: max
experiments:
  grid:
    run: my_trainables:train
    config: {x: {grid_search: [1.0, 2.0, 3.0]}, steps: 3}
  asha:
    run: my_trainables:train
    search: random
    num_samples: 4
    seed: 0
    scheduler: {type: asha, max_t: 3, grace_period: 1, reduction_factor: 2}
    config: {x: {uniform: [0.5, 3.5]}, steps: 3}
"""


@pytest.mark.slow  # an in-process run: the second tier
def test_real_runs_of_two_searchers_and_schedulers(ray_session, tmp_path, cli):
    """A FIFO grid and an ASHA random search of one spec, compared from the storage folder
    that holds both: each staircase ends at the best its summary names."""
    user_module("my_trainables.py", tmp_path)
    (tmp_path / "spec.yaml").write_text(SEARCHES)
    from tune_app.cli import main

    code = main(["run", str(tmp_path / "spec.yaml"), "--storage-path", str(tmp_path / "o"), "-q"])
    assert code == 0
    found = tune_app.compare(tmp_path / "o", html=tmp_path / "page.html")
    by_label = {r.label: r for r in found.runs}
    assert set(by_label) == {"grid", "asha"}
    summaries = {e.name: e for e in tune_app.read(tmp_path / "o")}
    for label, run in by_label.items():
        assert run.best == summaries[label].best_trial.score
        assert run.curve[-1].best == run.best
        assert run.curve[-1].trials == len(summaries[label].trials)
        assert run.curve[-1].seconds is not None and run.curve[-1].seconds >= 0
    assert by_label["grid"].best == 9.0 and by_label["grid"].curve[-1].iterations == 9
    assert by_label["asha"].scheduler == "asha"
    assert found.page is not None and Path(found.page).read_text().count("<img") == 3


def test_what_a_received_run_holds_is_printed_escaped(cli, tmp_path):
    """A received folder's values and names reached the terminal raw: an escape sequence set
    the window's title and the colours, a right-to-left override turned the text around."""
    hostile = "\x1b]0;PWNED\x07\x1b[31mRED\u202e"
    run = make_run(tmp_path / "a", [({"x": hostile}, [1.0]), ({"x": "[/]y[b]"}, [0.5])])
    named = make_run(tmp_path / "b\x1b[31m[/]", [({"x": "plain"}, [0.2])])
    for args in (
        ("analyze", run),
        ("analyze", run, "--format", "csv"),
        ("best", run, "--format", "overrides"),
        ("compare", run, named),
    ):
        result = cli(*args)
        assert result.code == 0, result.err
        assert "\x1b" not in result.out and "\u202e" not in result.out, args
        assert "\\x1b" in result.out or "\\u001b" in result.out, args  # shown, escaped
        # Shown as written: as rich's markup, `[/]` ended the command (best shows the best only).
        assert "[/]" in result.out or args[0] == "best", args


def test_compare_json_is_strict_json_whatever_the_runs_hold():
    """A score past a float's range came out as `Infinity`, which jq and strict parsers refuse."""
    from tune_app.readback.comparing import Comparison, Method

    method = Method("a", ("a",), (float("inf"), 1.0), "its seeds")
    found = Comparison("m", "max", runs=(), methods=(method,), improvements=())

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    assert json.loads(found.json(), parse_constant=refuse)["methods"][0]["scores"] == [None, 1.0]
