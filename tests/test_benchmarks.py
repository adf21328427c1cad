"""The benchmarks' own arithmetic (Ray-free): targets met or not, the table, the search cost,
the replayed table's lookups."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.common import Figure, paired, table, write_json
from benchmarks.costs import Costs, ratio_interval
from benchmarks.replay import TABLE, Position, Table, load_table
from benchmarks.search_rl import (
    AXES,
    MAX_T,
    RECORD_SEEDS,
    cost_until,
    curves_from_rows,
    figures_of,
    missing_rows,
    sampled,
    versus,
)


def test_targets_are_read_both_ways():
    low = Figure("b", "f", 1.1, "<= 1.15", "a", "b")
    high = Figure("b", "f", 0.7, ">= 0.8", "a", "b")
    assert low.met is True and high.met is False
    assert Figure("b", "f", 3.0, "", "a", "b").met is None
    text = table([low, high])
    assert "| b | f | 1.1 | 1 | <= 1.15 | yes |" in text and "| **no** |" in text


def test_paired_repetitions_alternate_and_give_the_median_ratio_with_its_spread():
    calls = []
    a_values, b_values = iter([10.0, 12.0, 30.0]), iter([10.0, 10.0, 10.0])

    def a():
        calls.append("a")
        return next(a_values)

    def b():
        calls.append("b")
        return next(b_values)

    pairs = paired(a, b, repeats=3)
    assert calls == ["a", "b", "a", "b", "a", "b"]
    assert pairs.ratios == (1.0, 1.2, 3.0) and pairs.value == 1.2 and pairs.spread == (1.0, 3.0)
    figure = pairs.figure("b", "f", "<= 1.5", "app {:.1f} s", "hand {:.1f} s")
    assert figure.repeats == 3 and figure.numerator == "app 12.0 s"
    assert figure.met is None and figure.verdict == "not shown"  # 3.0 lies past the target
    assert "| b | f | 1.2 (1-3) | 3 | <= 1.5 | not shown |" in table([figure])


@pytest.mark.parametrize(
    "value, spread, target, met, verdict",
    [
        pytest.param(0.2, (0.1, 0.24), "<= 0.25", True, "yes", id="inside"),
        pytest.param(0.2, (0.1, 0.4), "<= 0.25", None, "not shown", id="crosses"),
        pytest.param(0.5, (0.3, 0.9), "<= 0.25", False, "**no**", id="outside"),
        pytest.param(0.9, (0.8, 0.95), "< 1", True, "yes", id="strict"),
        pytest.param(0.9, (0.8, 1.0), "< 1", None, "not shown", id="strict-touches"),
        pytest.param(0.9, None, "", None, "-", id="no-target"),
    ],
)
def test_a_spread_across_the_target_shows_nothing(value, spread, target, met, verdict):
    figure = Figure("b", "f", value, target, "a", "b", spread=spread)
    assert figure.met is met and figure.verdict == verdict
    if spread:
        assert f"| {value:.3g} ({spread[0]:.3g}-{spread[1]:.3g}) |" in table([figure])


def test_ppo_throughput_is_the_median_rate_of_the_iterations_after_the_first():
    from benchmarks.throughput import steady_rate

    rows = [
        {"num_env_steps_sampled_lifetime": 4000, "time_this_iter_s": 9.0},  # warm-up: left out
        {"num_env_steps_sampled_lifetime": 8000, "time_this_iter_s": 4.0},  # 1000/s
        {"num_env_steps_sampled_lifetime": 12000, "time_this_iter_s": 2.0},  # 2000/s
        {"num_env_steps_sampled_lifetime": 16000, "time_this_iter_s": 5.0},  # 800/s
    ]
    assert steady_rate(rows) == pytest.approx(1000.0)


def test_search_cost_counts_results_until_the_goal_in_arrival_order():
    rows = [  # two trials side by side; the second reaches the goal on its second result
        {"trial_id": "a", "training_iteration": 1, "episode_return_mean": 20.0},
        {"trial_id": "b", "training_iteration": 1, "episode_return_mean": 30.0},
        {"trial_id": "a", "training_iteration": 2, "episode_return_mean": float("nan")},
        {"trial_id": "b", "training_iteration": 2, "episode_return_mean": 495.0},
        {"trial_id": "a", "training_iteration": 3, "episode_return_mean": 500.0},
    ]
    assert cost_until(rows, 490.0) == (4, 5)
    assert cost_until(rows, 501.0) == (None, 5)
    assert cost_until(rows, 25.0, mode="min") == (1, 5)
    assert missing_rows(rows) == []
    assert missing_rows(rows[:2] + rows[3:]) == ["a"]  # a's second result lost


def test_costs_count_a_missed_run_as_all_it_spent():
    costs = Costs("asha", (120, 300, 90, 2000), (False, False, False, True))
    assert costs.median == 210 and costs.missed == 1
    assert costs.censored == (120, 300, 90, math.inf)
    assert costs.listing() == "120 300 90 2000+"
    text = costs.describe()
    assert "median 210" in text and "90-2,000 over 4 seeds" in text and "1 of 4 never" in text
    assert Costs("grid", (350,)).describe() == "grid 350 trial-iterations (one run)"


def test_misses_never_make_a_target_look_met():
    """A method that missed in most runs spent little only because its budget ran out: against
    a target it counts as never getting there. The other side's misses count as all they spent,
    which can only make the ratio larger."""
    often_missed = Costs("bohb", (300, 300, 300, 100, 100), (True, True, True, False, False))
    random_ = Costs("random", (2000, 3000, 10_000), (False, False, True))
    figure = versus(often_missed, random_, "<= 0.5")
    assert figure.value == math.inf and figure.verdict == "not shown"  # 2 of 5 did get there
    never = Costs("bohb", (300, 300, 300), (True, True, True))
    assert versus(never, random_, "<= 0.5").verdict == "**no**"
    assert versus(Costs("asha", (500, 600, 700)), random_, "<= 0.5").value == 0.2
    once_missed = Costs("pbt", (100, 120, 140, 600), (False, False, False, True))
    assert versus(once_missed, random_, "<= 0.5").value == 130 / 3000


def test_the_ratio_interval_holds_the_ratio_of_medians():
    low, high = ratio_interval((100, 120, 140, 160, 400), (1000,))
    assert low <= 140 / 1000 <= high
    assert 0.1 <= low and high <= 0.4  # resampled medians stay among the values
    assert ratio_interval((5, 5, 5), (10, 10)) == (0.5, 0.5)
    assert ratio_interval((1, 2, 3), (4, 5, 6), seed=3) == ratio_interval(
        (1, 2, 3), (4, 5, 6), seed=3
    )


def test_the_control_asks_schedulers_not_to_lose_to_random_search():
    costs = {
        "grid": Costs("grid", (1000,)),
        "random": Costs("random", (400, 500, 600)),
        "asha": Costs("asha", (100, 200, 150)),
        "pbt": Costs("pbt", (900, 1000, 1100)),
        "optuna-tpe-median": Costs("optuna-tpe-median", (300, 300, 300)),
    }
    found = {f.name.split(":")[0]: f for f in figures_of(costs, 10_000, 490.0)}
    assert found["grid"].value == 0.1
    assert found["asha / grid"].value == 0.15 and found["asha / grid"].target == ""
    assert found["asha / random"].value == 0.3 and found["asha / random"].target == "<= 1.25"
    assert found["asha / random"].met is True
    assert found["pbt / random"].met is False  # 2x random, 1.5x at best: a loss
    assert found["asha / optuna-tpe-median"].value == 0.5
    assert found["asha / optuna-tpe-median"].target == ""
    assert {f.benchmark for f in found.values()} == {"search_rl"}


def small_table() -> Table:
    axes = {"lr": [0.01, 0.1, 1.0], "population": [8, 16]}
    curves = [[float(10 * i + t) for t in range(4)] for i in range(6)]
    return Table("score", "max", axes, curves)


@pytest.mark.parametrize(
    "config, index",
    [
        pytest.param({"lr": 0.01, "population": 8}, 0, id="exact"),
        pytest.param({"lr": 0.03, "population": 16}, 1, id="log-nearer-low"),
        pytest.param({"lr": 0.04, "population": 16}, 3, id="log-nearer-high"),
        pytest.param({"lr": 50.0, "population": 9}, 4, id="beyond-the-end"),
        pytest.param({"population": 16}, 3, id="missing-takes-middle"),
    ],
)
def test_a_config_replays_the_nearest_recorded_one_on_a_log_scale(config, index):
    replayed = small_table()
    assert replayed.nearest(config) == index
    assert replayed.configs()[3] == {"lr": 0.1, "population": 16}


def test_a_table_checks_its_shape():
    with pytest.raises(ValueError, match="6 configurations on the axes, but 5 curves"):
        Table("score", "max", {"lr": [0.01, 0.1, 1.0], "population": [8, 16]}, [[0.0]] * 5)
    with pytest.raises(ValueError, match="positive"):
        Table("score", "max", {"lr": [0.0, 1.0]}, [[0.0], [1.0]])


def test_a_moved_trial_goes_on_where_the_new_curve_reached_its_level():
    curves = [
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],  # the old curve
        [0.0, 0.0, 15.0, 35.0, 45.0, 80.0],  # slower, then faster
        [5.0, 5.0, 5.0, 5.0, 5.0, 5.0],  # never gets there
    ]
    replayed = Table("score", "max", {"lr": [1.0, 2.0, 3.0]}, curves)
    at = Position(0, 4)  # reported 10, 20, 30, 40: level (20 + 30 + 40) / 3 = 30
    assert at.moved_to(0, replayed) == at  # the same curve: exactly where it was
    # curve 1 smoothed: 0, 0, 5, 16.7, 31.7 -> first at or above 30 is index 4: go on at 5
    assert at.moved_to(1, replayed) == Position(1, 5)
    assert at.moved_to(2, replayed) == Position(2, 1)  # its best is its first value
    assert Position(0, 0).moved_to(1, replayed) == Position(1, 0)


def test_recorded_rows_become_curves_in_the_table_order():
    axes = {"lr": [0.1, 1.0], "population": [8, 16]}
    rows = []
    for n, (lr, pop) in enumerate([(1.0, 16), (0.1, 8), (0.1, 16), (1.0, 8)]):
        for it in (1, 2):
            row = {"trial_id": f"t{n}", "training_iteration": it, "episode_return_mean": n + it}
            if it == 1:
                row["config"] = {"lr": lr, "population": pop, "seed": 0}
            rows.append(row)
    assert curves_from_rows(rows, axes, 2) == [[2, 3], [3, 4], [4, 5], [1, 2]]
    with pytest.raises(ValueError, match="lack results"):
        curves_from_rows(rows[:-1], axes, 2)
    off = [{**rows[0], "config": {"lr": 0.5, "population": 8}}]
    with pytest.raises(ValueError, match="not on the grid"):
        curves_from_rows(off, axes, 1)


def test_recorded_seeds_are_averaged_and_a_missing_seed_is_refused():
    axes = {"lr": [0.1, 1.0]}
    rows = []
    for n, (lr, seed, values) in enumerate(
        [(0.1, 0, [1, 2]), (1.0, 0, [5, 6]), (0.1, 1, [3, 5]), (1.0, 1, [6, 9])]
    ):
        for it, value in enumerate(values, 1):
            row = {"trial_id": f"t{n}", "training_iteration": it, "episode_return_mean": value}
            if it == 1:
                row["config"] = {"lr": lr, "seed": seed}
            rows.append(row)
    assert curves_from_rows(rows, axes, 2) == [[2, 3.5], [5.5, 7.5]]
    one_seed_short = [r for r in rows if r["trial_id"] != "t3"]  # lr 1.0 lacks seed 1
    with pytest.raises(ValueError, match=r"lack results, the first \{'lr': 1.0\} with seed 1"):
        curves_from_rows(one_seed_short, axes, 2)


def test_sampled_ranges_give_every_recorded_value_an_equal_share():
    low, high = sampled([0.01, 0.1, 1.0])["loguniform"]
    assert math.isclose(low, 10**-2.5, rel_tol=1e-5) and math.isclose(high, 10**0.5, rel_tol=1e-5)


def test_the_committed_table_matches_the_recorded_space():
    data = json.loads(TABLE.read_text())
    replayed = load_table()
    assert replayed.axes == AXES == data["axes"]
    assert replayed.iterations == MAX_T and len(replayed.curves) == math.prod(
        map(len, AXES.values())
    )
    assert replayed.best == 500.0  # CartPole's limit: the goal is holding the pole all episode
    assert "recorded through the app" in replayed.about
    assert f"the mean over seeds {', '.join(map(str, RECORD_SEEDS))}" in replayed.about


def test_results_are_strict_json_when_a_method_never_got_there(tmp_path):
    never = Costs("pbt", (500, 600, 650), (True, True, True))
    figure = versus(never, Costs("random", (2000, 3000)), "<= 0.5")
    path = tmp_path / "results.json"
    write_json(path, [figure], quick=True)
    written = json.loads(path.read_text(), parse_constant=pytest.fail)  # no Infinity, no NaN
    assert written["figures"][0]["value"] is None
    assert written["figures"][0]["spread"] == [None, None]
    assert written["figures"][0]["verdict"] == "**no**"


@pytest.mark.parametrize(
    ("a", "b", "within"),
    [
        pytest.param([20.0, 25.0, 30.0], [22.0, 26.0, 31.0], True, id="alike"),
        pytest.param([20.0, 21.0, 22.0], [40.0, 45.0, 50.0], False, id="apart"),
        pytest.param([20.0, 30.0], [], False, id="one-side-empty"),
    ],
)
def test_learning_is_unchanged_when_each_median_lies_in_the_others_range(a, b, within):
    from benchmarks.layout import _within

    assert _within(a, b) is within


def test_layout_sides_write_their_layout_and_read_nested_results():
    from benchmarks.layout import ADVICE, _layout, _value

    assert _layout({}) == "app" and _layout({**ADVICE, "lr": 0.1}) == "rllib"
    row = {"env_runners": {"episode_return_mean_smoothed": 9.5}, "a/b": 1}
    assert _value(row, "env_runners/episode_return_mean_smoothed") == 9.5
    assert _value(row, "a/b") == 1 and _value(row, "env_runners/missing") is None


@pytest.mark.parametrize(
    ("cpus", "expected"),
    [(1, [1]), (2, [1, 2]), (6, [1, 2, 4, 6]), (16, [1, 2, 4, 8, 16]), (17, [1, 2, 4, 8, 16, 17])],
)
def test_nested_measures_k_in_powers_of_two_and_the_cores(cpus, expected):
    from benchmarks.nested import ks

    assert ks(cpus) == expected


def test_the_lcbench_runs_check_their_rungs_against_epoch_52(tmp_path):
    from benchmarks import search

    rows = []
    for i in range(6):  # six trials reach epoch 52, ranked at epoch 2 in reverse; one stops at 6
        rows += [
            {"trial_id": f"t{i}", "epoch": 2, "val_accuracy": 50.0 - i},
            {"trial_id": f"t{i}", "epoch": 6, "val_accuracy": 60.0 + i},
            {"trial_id": f"t{i}", "epoch": 52, "val_accuracy": 80.0 + i},
        ]
    rows.append({"trial_id": "cut", "epoch": 6, "val_accuracy": 10.0})
    found = search.rung_spearman(rows)
    assert found == {"2": pytest.approx(-1.0), "6": pytest.approx(1.0), "18": None}
    records = tmp_path / "r.jsonl"
    records.write_text(
        '{"task": "167168", "method": "asha", "seed": 0, "cost": 5, "spent": 9, "regret": 1.0,'
        ' "rungs": {"2": -1.0, "6": 1.0, "18": null}}\n'
        '{"task": "167168", "method": "random", "seed": 0, "cost": 5, "spent": 9, "regret": 1.0}\n'
    )
    runs = search.recorded(records)
    assert runs["167168", "asha", 0].rungs == {"2": -1.0, "6": 1.0, "18": None}
    assert runs["167168", "random", 0].rungs == {}


def test_warm_start_continues_the_first_search_and_judges_each_arm_over_both(tmp_path, monkeypatch):
    from benchmarks import search, warm_start
    from benchmarks.search import EPOCHS, EXPERIMENT, Goal
    from tune_app import api

    finals = {"cold": [70, 80, 85, 60], "first": [70, 75], "warm": [88, 60], "restart": [72, 74]}
    seen = {}

    def search_(spec, folder, runs):
        seen[runs.name] = spec
        return [
            {"trial_id": f"{runs.name}{i}", "epoch": e, "val_accuracy": 50.0 if e < EPOCHS else v}
            for i, v in enumerate(finals[runs.name])
            for e in range(1, EPOCHS + 1)
        ]

    monkeypatch.setattr(search, "run_search", search_)
    monkeypatch.setattr(warm_start, "_told", lambda folder: 2)
    goal = Goal("t", threshold=86.0, best=90.0, typical=40.0, size=10)
    found = [o for s in (0, 1) for o in warm_start.run_seed("t", s, goal, tmp_path, 4, None)]

    first = tmp_path / "t-1" / "first" / EXPERIMENT
    exps = {name: spec["experiments"][EXPERIMENT] for name, spec in seen.items()}
    assert exps["warm"]["warm_start"] == [str(first)]
    assert all("warm_start" not in e for name, e in exps.items() if name != "warm")
    assert [exps[n]["num_samples"] for n in ("cold", "first", "warm", "restart")] == [4, 2, 2, 2]
    assert [seen[n]["seed"] for n in ("first", "warm", "restart")] == [1, 10_001, 10_001]
    assert all(s["scheduler"] == "fifo" and s["search"] == search.TPE for s in seen.values())
    assert all(e["config"]["goal"] > 100 for e in exps.values())  # no search ends early
    api.validate(seen["cold"])

    arms = {o.arm: o for o in found if o.seed == 1}
    assert (arms["cold"].regret, arms["cold"].first, arms["cold"].second) == (5, 10, 5)
    assert (arms["warm"].regret, arms["warm"].first, arms["warm"].second) == (2, 15, 2)
    assert (arms["restart"].regret, arms["restart"].second) == (15, 16)
    assert arms["warm"].cost == 3 * EPOCHS and arms["cold"].cost is None
    assert {o.spent for o in arms.values()} == {4 * EPOCHS}
    assert (arms["warm"].told, arms["restart"].told) == (2, 0)

    figures = {f.name: f for f in warm_start.figures_of(warm_start.by_task(found), 4)}
    assert figures["t: warm - cold, regret after 4 trials"].value == -3
    assert figures["t: warm - restart, regret after 4 trials"].value == -13
    assert "| t | warm | 2 | 2.00 | 15.00 | 2.00 | - | 156 |" in warm_start.summary(
        warm_start.by_task(found), 4
    )


def _flooded(folder: Path, results: int, order: list[int] | None = None) -> None:
    """A run folder as the full-rate benchmark's trials leave it, each trial's indices written
    in `order` (in order by default) to results.jsonl and to its events file."""
    from tune_app.tensorboard.events import EventWriter

    order = list(range(results)) if order is None else order
    rows = []
    for trial in ("t0", "t1"):
        writer = EventWriter(str(folder / trial))
        for i in order:
            rows.append({"trial_id": trial, "training_iteration": i + 1, "index": i})
            writer.add_scalars({"metrics/index": float(i)}, global_step=i + 1)
        writer.close()
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_full_rate_check_holds_every_result_in_order_and_finds_one_lost_or_moved(
    tmp_path: Path,
) -> None:
    from benchmarks.full_rate import check_every_result

    _flooded(tmp_path / "whole", 5)
    check_every_result(tmp_path / "whole", 5)
    for name, order in {
        "lost": [0, 1, 3, 4],
        "moved": [0, 2, 1, 3, 4],
        "twice": [0, 1, 1, 2, 3, 4],
    }.items():
        _flooded(tmp_path / name, 5, order)
        with pytest.raises(AssertionError):
            check_every_result(tmp_path / name, 5)


def test_the_end_rates_are_of_the_first_and_last_thousand_ends() -> None:
    from benchmarks.scale import end_rates

    steady = [i * 0.1 for i in range(20_000)]  # 10 a second throughout
    assert end_rates(steady) == pytest.approx((10.0, 10.0))
    slowing = [i * 0.1 for i in range(10_000)] + [1000 + i * 0.2 for i in range(10_000)]
    first, last = end_rates(slowing)
    assert first == pytest.approx(10.0) and last == pytest.approx(5.0)
    few = [float(i) for i in range(50)]  # a tenth of them: 5 ends
    assert end_rates(few) == pytest.approx((1.0, 1.0))


def test_the_prestarted_side_without_the_patch_replaces_it_where_a_fit_finds_it():
    """Replacing a name the app no longer reads measured the patch against itself."""
    import re

    from benchmarks.prestarted import WITHOUT
    from tests.conftest import ROOT

    module = re.search(r"import (\S+) as r;", WITHOUT)
    assert module is not None
    source = ROOT.joinpath(*module[1].split(".")).with_suffix(".py")
    assert "def trials_on_prestarted_workers(" in source.read_text()
