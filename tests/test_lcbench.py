"""The LCBench trainable (YAHPO Gym's surrogate, on the shared data) and the LCBench search
benchmark's arithmetic: the goal from the pool, a run's cost and regret, the pooled figures, and
where Tune's schedulers put their rungs (never at epoch 1)."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from benchmarks import search  # noqa: E402
from benchmarks.search import Goal, Run, figures_of, goal_of, judge, load_records  # noqa: E402
from trainables import lcbench  # noqa: E402

needs_data = pytest.mark.skipif(
    not lcbench.SHARED.is_dir(), reason="no shared LCBench data beside the project"
)
# The data README's checked example: task 167168 with its config, val_accuracy by epoch.
EXAMPLE = {1: 22.8, 2: 37.5, 26: 74.0, 52: 77.9}


@needs_data
def test_the_surrogate_gives_the_data_readme_example():
    values = lcbench.curve({"task": "167168", **lcbench.DEFAULTS})
    assert values.shape == (52, 2)
    for epoch, expected in EXAMPLE.items():
        assert values[epoch - 1, 1] == pytest.approx(expected, abs=0.05)
    assert np.all(np.diff(values[:, 0]) > 0)  # training time adds up epoch by epoch


@needs_data
def test_out_of_range_hyperparameters_and_unknown_tasks_are_refused():
    with pytest.raises(ValueError, match=r"learning_rate must lie in \[0.0001, 0.1\], got 0.5"):
        lcbench.curve({"learning_rate": 0.5})
    with pytest.raises(ValueError, match="no OpenML task '42'"):
        lcbench.curve({"task": "42"})


def test_a_data_folder_without_the_model_is_named(tmp_path):
    (tmp_path / "encoding.json").write_text("{}")
    with pytest.raises(lcbench.DataError, match="lacks model.onnx"):
        lcbench.locate(tmp_path)


@needs_data
def test_a_download_is_checked_before_it_takes_its_name(tmp_path):
    """The download path, with the public address replaced by a local folder (file: URLs):
    right bytes arrive under their names, wrong ones never do, and no address is one line."""
    source = tmp_path / "source"
    source.mkdir()
    for name in lcbench.FILES:
        shutil.copy(lcbench.SHARED / name, source / name)
    fetched = lcbench.download(tmp_path / "cache", source.as_uri() + "/")
    assert all((fetched / name).is_file() for name in lcbench.FILES)
    (source / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(lcbench.DataError, match="does not match its sha256"):
        lcbench.download(tmp_path / "other", source.as_uri() + "/")
    assert not (tmp_path / "other" / "model.onnx").exists()
    with pytest.raises(lcbench.DataError, match="could not be downloaded"):
        lcbench.download(tmp_path / "offline", (tmp_path / "nowhere").as_uri() + "/")


def test_the_pool_is_drawn_within_lcbench_ranges():
    configs = search.sample(2000, seed=1)
    for key, (low, high, _, integer) in lcbench.SPACE.items():
        values = [c[key] for c in configs]
        assert low <= min(values) and max(values) <= high, key
        if integer:
            assert all(v == int(v) for v in values) and max(values) == high, key
    assert search.sample(50, seed=1) == search.sample(50, seed=1)  # the same pool every time


def test_the_goal_is_the_top_share_of_the_pool():
    goal = goal_of("t", [float(v) for v in range(1, 101)], top=0.05)
    assert goal.threshold == pytest.approx(95.05)  # numpy's linear quantile at 0.95
    assert goal.best == 100 and goal.typical == 50.5 and goal.size == 100


def _row(epoch, value):
    return {"epoch": epoch, "val_accuracy": value}


def test_cost_counts_epochs_until_a_final_value_in_the_top_and_regret_at_the_budget():
    goal = Goal("t", threshold=80.0, best=90.0, typical=40.0, size=1000)
    rows = [_row(e, 85.0) for e in range(1, 52)]  # high early values do not count: not final
    rows += [_row(52, 70.0)]  # row 52: a final value below the goal
    rows += [_row(e, 10.0) for e in range(1, 3)]
    rows += [_row(52, 81.0)]  # row 55: the goal
    assert judge(rows, goal, budget=60) == Run(cost=55, spent=55, regret=9.0)
    assert judge(rows, goal, budget=54) == Run(cost=55, spent=55, regret=20.0)  # 70 by then
    assert judge(rows[:51], goal, budget=60) == Run(None, 51, regret=50.0)  # none final: typical


def _runs(costs, regret=5.0):
    return [Run(c, c or 10_000, regret) for c in costs]


def test_pooled_ratios_are_geometric_means_over_tasks_with_targets_on_them():
    goals = {t: Goal(t, 80.0, 90.0, 40.0, 100_000) for t in ("a", "b")}
    runs = {
        "a": {
            "random": _runs([1000] * 5),
            "asha": _runs([100] * 5),
            "optuna-tpe-median": _runs([500] * 5),
        },
        "b": {
            "random": _runs([1000] * 5),
            "asha": _runs([400] * 5),
            "optuna-tpe-median": _runs([500] * 5),
        },
    }
    found = {f.name: f for f in figures_of(runs, goals)}
    pooled = found["pooled: asha / random, epochs to the top 1% (geometric mean over tasks)"]
    assert pooled.value == pytest.approx(0.2)  # sqrt(0.1 * 0.4)
    assert pooled.target == "<= 0.4" and pooled.met is True and pooled.repeats == 10
    assert found["a: asha / random, epochs to the top 1%"].value == pytest.approx(0.1)
    assert found["a: asha / random, epochs to the top 1%"].target == ""
    zoo = found[
        "pooled: asha / optuna-tpe-median, epochs to the top 1% (geometric mean over tasks)"
    ]
    assert zoo.value == pytest.approx(0.4) and zoo.met is True
    assert (
        found[
            "pooled: optuna-tpe-median / random, epochs to the top 1% (geometric mean over tasks)"
        ].target
        == ""
    )


def test_a_scheduler_that_never_got_there_cannot_meet_its_target():
    goals = {"a": Goal("a", 80.0, 90.0, 40.0, 100)}
    runs = {"a": {"random": _runs([1000] * 4), "asha": _runs([None, None, None, 100])}}
    (pooled,) = [f for f in figures_of(runs, goals) if f.name.startswith("pooled: asha /")]
    assert pooled.value == math.inf and pooled.verdict == "not shown"  # one run did get there
    runs["a"]["asha"] = _runs([None] * 4)
    (pooled,) = [f for f in figures_of(runs, goals) if f.name.startswith("pooled: asha /")]
    assert pooled.met is False


def test_bohb_regret_is_judged_against_hyperbands():
    goals = {"a": Goal("a", 80.0, 90.0, 40.0, 100)}
    runs = {
        "a": {
            "random": _runs([1000] * 4, 9.0),
            "hyperband": _runs([500] * 4, 3.0),
            "bohb": _runs([500] * 4, 2.0),
        }
    }
    found = {f.name: f for f in figures_of(runs, goals)}
    diff = found[f"pooled: bohb regret - hyperband regret after {search.BUDGET:,} epochs"]
    assert diff.value == -1.0 and diff.target == "<= 0" and diff.met is True
    assert (
        found[f"pooled: random regret after {search.BUDGET:,} epochs (val_accuracy points)"].value
        == 9.0
    )


def test_records_keep_only_the_seeds_every_method_ran(tmp_path):
    import json

    path = tmp_path / "records.jsonl"
    lines = [
        {"task": "a", "method": m, "seed": s, "cost": 10 * (s + 1), "spent": 99, "regret": 1.0}
        for s in (0, 1)
        for m in ("random", "asha")
    ][:-1]  # seed 1 of asha never ran: the run was cut short
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    runs = load_records(path)
    assert runs == {"a": {"random": [Run(10, 99, 1.0)], "asha": [Run(10, 99, 1.0)]}}


# ---- where the schedulers put their rungs ------------------------------------------------------


class _Trial:
    """What Tune's schedulers read of a trial."""

    def __init__(self, n):
        from ray.tune.experiment import Trial

        self.trial_id, self.status, self.is_saving = f"t{n}", Trial.RUNNING, False


class _Searcher:
    def on_pause(self, trial_id):
        pass

    def on_unpause(self, trial_id):
        pass


class _Controller:
    """What the schedulers call on Tune's controller (BOHB's tells its searcher of pauses)."""

    def __init__(self):
        self.search_alg = type("SearchAlg", (), {"searcher": _Searcher()})()

    def stop_trial(self, trial):
        from ray.tune.experiment import Trial

        trial.status = Trial.TERMINATED


def _first_decisions(options: dict, searcher: str, trials: int) -> list[int]:
    """Each trial fed its epochs in turn through the scheduler the app builds for `options`:
    the epoch at which the scheduler first paused or stopped it (none if it ran to 52)."""
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    from tune_app.methods.common import Context
    from tune_app.methods.schedulers import SCHEDULERS

    entry = SCHEDULERS[options["type"]]
    scheduler = entry.build(entry.options(**options), Context(searcher=searcher))
    scheduler.set_search_properties("val_accuracy", "max")
    controller, rng = _Controller(), np.random.default_rng(0)
    made = [_Trial(n) for n in range(trials)]
    for t in made:
        scheduler.on_trial_add(controller, t)
    found = []
    for t in made:
        quality = rng.uniform(0, 80)
        for epoch in range(1, 53):
            result = {
                "epoch": epoch,
                "val_accuracy": quality * epoch / 52,
                "training_iteration": epoch,
            }
            decision = scheduler.on_trial_result(controller, t, result)
            if decision != TrialScheduler.CONTINUE:
                t.status = Trial.PAUSED if decision == TrialScheduler.PAUSE else Trial.TERMINATED
                found.append(epoch)
                break
    return found


def test_asha_judges_trials_at_epochs_2_6_and_18_never_1():
    stops = set(_first_decisions(search.ASHA, "random", 200)) - {52}  # 52: the trial's end
    assert stops == {2, 6, 18}
    # The check can fail: with a grace period of 1, ASHA would judge epoch 1.
    assert 1 in _first_decisions({**search.ASHA, "grace_period": 1}, "random", 200)


@pytest.mark.parametrize("searcher", ["random", "bohb"])
def test_hyperband_brackets_start_at_2_6_and_18_epochs_never_1(searcher):
    band = search.BAND
    firsts = _first_decisions(search.HYPERBAND, searcher, band)
    assert min(firsts) == 2 and {2, 6, 18} <= set(firsts)
    # With max_t 52, Tune's fourth bracket starts at int(52 / 27) = 1 epoch.
    assert min(_first_decisions({**search.HYPERBAND, "max_t": 52}, searcher, band)) == 1


# ---- through the app ---------------------------------------------------------------------------


@needs_data
def test_the_trainable_runs_through_the_app_and_reports_the_readme_values(ray_session, tmp_path):
    import tune_app
    from benchmarks.common import read_results

    spec = {
        "metric": "val_accuracy",
        "mode": "max",
        "search": "grid",
        "experiments": {
            "lcbench": {
                "run": "lcbench",
                "stop": {"epoch": 3},
                "config": {
                    "task": "167168",
                    "learning_rate": {"grid_search": [0.01, 0.001]},
                    "checkpoint": False,
                },
            }
        },
    }
    result = tune_app.run(spec, storage_path=tmp_path)
    assert result.passed
    rows = read_results(tmp_path / "lcbench")
    by_trial: dict[str, dict[int, dict]] = {}
    for row in rows:
        by_trial.setdefault(row["trial_id"], {})[row["epoch"]] = row
    assert sorted(len(epochs) for epochs in by_trial.values()) == [3, 3]
    readme = [e for e in by_trial.values() if e[1]["config"]["learning_rate"] == 0.01]
    (epochs,) = readme
    assert epochs[1]["val_accuracy"] == pytest.approx(EXAMPLE[1], abs=0.05)
    assert epochs[2]["val_accuracy"] == pytest.approx(EXAMPLE[2], abs=0.05)
    assert 0 < epochs[1]["time"] < epochs[2]["time"] < epochs[3]["time"]


# ---- the one-epoch baseline (Egele et al.): short trials, then the best to the end ------------


def _config(n: int) -> dict:
    return {key: float(n) for key in search.SPACE}


def _trial_rows(trial: str, config: dict, values: list[float]) -> list[dict]:
    """A trial's results as results.jsonl holds them: the config on its first row only."""
    rows = [{"trial_id": trial, "epoch": e, "val_accuracy": v} for e, v in enumerate(values, 1)]
    rows[0]["config"] = {**config, "task": "t", "folder": "/f"}
    return rows


def test_finalists_are_the_best_at_k_epochs_best_first():
    rows = []
    for n, first_two in enumerate([(10, 40), (90, 20), (30, 60), (50, 60), (99,)]):
        rows += _trial_rows(f"t{n}", _config(n), list(first_two))
    # At epoch 2: t2 and t3 tie at 60 (t2 reported first), then t0; t4 never reached epoch 2.
    assert search.finalists(rows, 2, 3) == [_config(2), _config(3), _config(0)]
    assert search.finalists(rows, 1, 2) == [_config(4), _config(1)]
    assert search.finalists(rows, 2, 10) == [_config(2), _config(3), _config(0), _config(1)]


def test_the_one_epoch_baseline_runs_two_searches_and_counts_every_epoch(tmp_path, monkeypatch):
    """The first search's trials stop at k epochs; the second is a grid over the top `keep`
    in rank order, to epoch 52; the cost counts the first search's epochs and the finalists'."""
    from tune_app import api

    method = next(m for m in search.METHODS if m.name == "one-epoch")
    k, keep, trials = method.finalists.epochs, method.finalists.keep[1], method.samples[1]
    goal = Goal("t", threshold=80.0, best=90.0, typical=40.0, size=1000)
    early = {n: float(n) for n in range(trials)}  # the epoch-1 value of configuration n
    final = {trials - 1: 70.0, trials - 2: 85.0}  # the 2nd best at epoch 1 meets the goal
    seen = []

    def search_(experiment, folder, runs):
        seen.append(experiment)
        api.validate(experiment)  # each phase is a spec the app accepts
        exp = experiment["experiments"][search.EXPERIMENT]
        if "finalist" not in exp["config"]:
            assert exp["stop"] == {"epoch": k} and exp["num_samples"] == trials
            return [r for n in early for r in _trial_rows(f"a{n}", _config(n), [early[n]] * k)]
        assert experiment["search"] == "grid" and exp["stop"] == {"epoch": search.EPOCHS}
        rows = []
        for i, config in enumerate(exp["config"]["finalist"]["grid_search"]):
            n = int(config["batch_size"])
            curve = [50.0] * (search.EPOCHS - 1) + [final.get(n, 60.0)]
            rows += _trial_rows(f"b{i}", config, curve)
        return rows

    monkeypatch.setattr(search, "run_search", search_)
    done = search.run_method(method, "t", 0, goal, tmp_path, True, None)
    chosen = seen[1]["experiments"][search.EXPERIMENT]["config"]["finalist"]["grid_search"]
    assert chosen == [_config(trials - 1 - i) for i in range(keep)]
    assert done.cost == trials * k + 2 * search.EPOCHS  # the second finalist's epoch 52
    assert done.spent == trials * k + keep * search.EPOCHS
    assert done.regret == pytest.approx(5.0)  # 90 - 85, within the budget


def test_the_figure_reads_every_ratio_against_random_and_draws_a_never(tmp_path):
    from benchmarks import search_plot
    from benchmarks.common import Figure, _finite

    rows = [
        Figure("search", "167168: one-epoch / random, epochs to the top 1%", math.inf, "", "a", "b",
               spread=(0.2, math.inf), repeats=5),
        Figure("search", "pooled: asha / random, epochs to the top 1% (geometric mean over tasks)",
               0.2, "<= 0.4", "a", "b", spread=(0.1, 0.3), repeats=60),
        Figure("search", "pooled: asha / optuna-tpe-median, epochs to the top 1% (geometric mean "
               "over tasks)", 0.9, "< 1", "a", "b", repeats=60),
        Figure("search_rl", "asha / random: trial-iterations to within 2% of the best", 0.3, "",
               "a", "b"),
    ]  # fmt: skip
    written = [{k: _finite(v) for k, v in vars(f).items()} for f in rows]  # as results.json
    found = search_plot.ratios(written)
    assert found == [
        search_plot.Ratio("167168", "one-epoch", None, 0.2, None, 5),
        search_plot.Ratio(search_plot.POOLED, "asha", 0.2, 0.1, 0.3, 60),
    ]
    search_plot.draw(found, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_new_methods_figures_go_beside_their_kind_in_a_results_file(tmp_path):
    import json

    from benchmarks.common import Figure

    def fig(name, value=1.0):
        return Figure("search", name, value, "", "a", "b", spread=(0.5, math.inf), repeats=3)

    old = [
        fig("t: asha / random, epochs to the top 1%"),
        fig("pooled: asha / random, epochs to the top 1% (geometric mean over tasks)"),
        fig("pooled: asha regret after 1,040 epochs (val_accuracy points)"),
        Figure("scale", "trials per second", 0.8, "", "a", "b"),
    ]
    path = tmp_path / "results.json"
    rows = [{**{k: v for k, v in vars(f).items()}, "spread": f.spread and [0.5, None]} for f in old]
    path.write_text(json.dumps({"figures": rows, "note": "kept", "sources": {"scale": "then"}}))
    new = [
        fig("t: one-epoch / random, epochs to the top 1%", math.inf),
        fig("pooled: one-epoch regret after 1,040 epochs (val_accuracy points)"),
        fig("pooled: random regret after 1,040 epochs (val_accuracy points)", 9.0),  # not added
        fig("t: asha / random, epochs to the top 1%", 2.0),  # not one of the methods
    ]
    text = search.add_to(path, new, ["one-epoch"], "today")
    data = json.loads(path.read_text())
    assert [r["name"].split(" /")[0].split(" regret")[0] for r in data["figures"]] == [
        "t: asha", "t: one-epoch", "pooled: asha", "pooled: asha", "pooled: one-epoch",
        "trials per second",
    ]  # fmt: skip
    assert data["figures"][0]["value"] == 1.0 and data["figures"][1]["value"] is None
    assert data["note"] == "kept" and data["sources"] == {
        "scale": "then",
        "search (one-epoch)": "today",
    }
    assert "| t: one-epoch / random, epochs to the top 1% | inf (0.5-inf) |" in text
