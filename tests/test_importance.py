"""Parameter importance: a parameter the score depends on ranks above ones it does not, whatever
their kind and by every method (permutation, Optuna's fANOVA and PED-ANOVA); too little data or
a missing library is a note, not a number. Ray-free: synthetic trials, run folders written by
hand, and LCBench's surrogate sampled directly."""

from __future__ import annotations

import json
import math
import random
import sys

import pytest

from tests.conftest import ROOT
from tests.test_report import lr_search, write_search
from tune_app.extras import installed
from tune_app.readback import analyze, report
from tune_app.readback.importance import EVALUATORS, MIN_TRIALS, Evaluated, evaluate, importances
from tune_app.readback.importance import run as imports_run
from tune_app.readback.importance.optuna_evaluators import axis
from tune_app.readback.importance.run import of_run, spec_domains
from tune_app.rundir import read as results
from tune_app.rundir.records import TrialOutcome
from tune_app.space import Domain

LABELS = tuple(e.label for e in EVALUATORS)
LCBENCH_SHARED = ROOT.parent / "shared" / "data" / "lcbench"  # trainables.lcbench.SHARED


def outcome(i: int, score: float | None, **params) -> TrialOutcome:
    return TrialOutcome(f"t{i}", "TERMINATED", {}, score, 1, params=params)


def search(n: int, driver: str, seed: int = 0, **weights: float) -> list[TrialOutcome]:
    """`n` trials of three parameters (a number, a log-scale number, a category) whose score
    depends on `driver` (or on each parameter times its weight), plus a little noise."""
    rng = random.Random(seed)
    weights = weights or {driver: 1.0}
    trials = []
    for i in range(n):
        params = {
            "x": rng.uniform(0, 1),
            "lr": 10 ** rng.uniform(-5, -1),
            "layers": rng.choice([[16], [64, 64], [256, 256]]),
        }
        effects = {
            "x": 10 * params["x"],
            "lr": 5.0 if params["lr"] > 1e-3 else 0.0,
            "layers": 3.0 * len(params["layers"]),
        }
        score = sum(w * effects[k] for k, w in weights.items())
        trials.append(outcome(i, score + rng.gauss(0, 0.3), **params))
    return trials


@pytest.mark.parametrize("driver", ["x", "lr", "layers"])
def test_the_parameter_that_drives_the_score_ranks_first(driver):
    found = importances(search(30, driver), ["x", "lr", "layers"], log_scaled=["lr"])
    first, *rest = found.params
    assert first.param == driver and first.share > 0.6, found
    assert all(i.share < 0.25 for i in rest), found
    assert sum(i.share for i in found.params) == pytest.approx(1.0)
    assert found.trials == 30 and found.fit is not None and found.fit > 0.5 and not found.note


def test_a_stronger_effect_ranks_above_a_weaker_one_above_none():
    found = importances(search(40, "", x=1.0, layers=0.3), ["lr", "layers", "x"])
    assert [i.param for i in found.params] == ["x", "layers", "lr"], found
    assert found.params[1].share > 5 * found.params[2].share, found


def test_the_numbers_are_the_same_every_time():
    trials = search(20, "x", seed=3)
    assert importances(trials, ["x", "lr", "layers"]) == importances(trials, ["x", "lr", "layers"])


def test_trials_without_a_score_are_left_out():
    trials = search(MIN_TRIALS, "x") + [outcome(99, None, x=0.5, lr=1e-3, layers=[16])]
    assert importances(trials, ["x", "lr"]).trials == MIN_TRIALS


@pytest.mark.parametrize(
    ("trials", "params", "note"),
    [
        pytest.param(search(MIN_TRIALS - 1, "x"), ["x", "lr"], "Only 4 trials", id="too-few"),
        pytest.param(
            [outcome(i, 1.0, x=i) for i in range(8)], ["x"], "the same score", id="flat-score"
        ),
        pytest.param(search(10, "x"), [], "No parameter", id="nothing-searched"),
    ],
)
def test_too_little_to_learn_from_is_a_note(trials, params, note):
    found = importances(trials, params)
    assert found.params == () and note in found.note


def test_one_parameter_takes_the_whole_share_and_says_so():
    found = importances(search(10, "x"), ["x"])
    assert [(i.param, i.share) for i in found.params] == [("x", 1.0)]
    assert "only one parameter" in found.note.lower()


def test_a_forest_that_cannot_predict_the_score_says_so():
    rng = random.Random(1)
    trials = [
        outcome(i, rng.gauss(0, 1), x=rng.uniform(0, 1), y=rng.uniform(0, 1)) for i in range(12)
    ]
    found = importances(trials, ["x", "y"])
    assert found.fit is not None and found.fit <= 0
    assert "do not predict the score" in found.note


# ---- Optuna's fANOVA and PED-ANOVA beside permutation importance ---------------------------------

PARAMS = ["x", "lr", "layers"]


def shares(found: Evaluated) -> list[str]:
    return [p for p, _ in found.shares]


@pytest.mark.parametrize("driver", ["x", "lr", "layers"])
def test_fanova_and_ped_anova_rank_the_parameter_that_drives_the_score_first(driver):
    found = evaluate(search(30, driver), PARAMS, "max", log_scaled=["lr"])
    assert [e.method for e in found] == ["fanova", "ped_anova"]
    for e in found:
        (top, share), *rest = e.shares
        assert top == driver and share > 0.6 and not e.note, e
        assert sum(s for _, s in e.shares) == pytest.approx(1.0)
        assert all(s < 0.25 for _, s in rest), e
        assert e.trials == 30


def test_fanova_ranks_a_stronger_effect_above_a_weaker_one_above_none():
    """(PED-ANOVA judges from the best 5 of 40 trials: it finds the strongest, not this order.)"""
    fanova, _ = evaluate(search(40, "", x=1.0, layers=1.0), ["lr", "layers", "x"], "max")
    assert shares(fanova) == ["x", "layers", "lr"], fanova
    assert fanova.share("layers") > 3 * fanova.share("lr"), fanova


def test_a_minimized_score_ranks_as_the_same_score_maximized():
    trials = search(30, "lr", seed=2)
    flipped = [outcome(i, -t.score, **t.params) for i, t in enumerate(trials)]
    assert evaluate(flipped, PARAMS, "min") == evaluate(trials, PARAMS, "max")
    assert evaluate(flipped, PARAMS, "max") != evaluate(trials, PARAMS, "max")  # PED-ANOVA's best


def test_optunas_numbers_are_the_same_every_time():
    trials = search(20, "x", seed=3)
    assert evaluate(trials, PARAMS, "max") == evaluate(trials, PARAMS, "max")


def test_a_trial_without_a_number_or_a_score_is_left_out_not_a_crash():
    """(A category's missing value is a category of its own: a conditional parameter.)"""
    trials = search(12, "x") + [outcome(99, None, x=0.5)]
    trials += [outcome(100 + i, 1.0, x=0.5, layers=[16]) for i in range(3)]  # no lr
    for e in evaluate(trials, PARAMS, "max"):
        assert e.trials == 12 and shares(e)[0] == "x", e


def test_too_little_to_learn_from_is_each_evaluators_note():
    found = evaluate(search(MIN_TRIALS - 1, "x"), PARAMS, "max")
    assert [e.shares for e in found] == [(), ()]
    assert all("Only 4 trials" in e.note for e in found)


@pytest.mark.parametrize(
    ("domain", "values", "expected"),
    [
        pytest.param(Domain("uniform", (0.0, 1.0)), [0.5], ("float", 0.0, 1.0), id="uniform"),
        pytest.param(Domain("uniform", (0.0, 1.0)), [1.2], ("float", 0.0, 1.2), id="widened"),
        pytest.param(Domain("loguniform", (1e-4, 0.1)), [1e-3], ("float", -4, -1), id="log10"),
        pytest.param(Domain("randint", (1, 6)), [3], ("int", 1, 5), id="randint-upper-out"),
        pytest.param(Domain("qrandint", (0, 10, 5)), [5], ("int", 0, 10), id="qrandint"),
        pytest.param(
            Domain("lograndint", (16, 513)), [64], ("float", 1.2041, 2.7093), id="lograndint"
        ),
        pytest.param(Domain("randn", (0.0, 1.0)), [-2.0, 3.0], ("float", -2, 3), id="randn"),
        pytest.param(
            Domain("choice", ("relu", "tanh")), ["relu"], ("cat", "relu", "tanh"), id="choice"
        ),
        pytest.param(
            Domain("grid_search", ([16], [64, 64])), [[16]], ("cat", "[16]", "[64, 64]"), id="grid"
        ),
        pytest.param(None, [3, 1, None], ("int", 1, 3), id="inferred-int"),
        pytest.param(None, [0.5, 2.0], ("float", 0.5, 2.0), id="inferred-float"),
        pytest.param(None, ["a", 1], ("cat", "a", 1), id="inferred-mixed"),
    ],
)
def test_the_spec_domain_becomes_an_optuna_distribution_holding_every_value(
    domain, values, expected
):
    from optuna.distributions import CategoricalDistribution, IntDistribution

    dist = axis(domain, values).distribution
    if isinstance(dist, CategoricalDistribution):
        assert ("cat", *dist.choices) == expected
    else:
        kind = "int" if isinstance(dist, IntDistribution) else "float"
        assert (kind, dist.low, dist.high) == pytest.approx(expected, abs=1e-4)
        assert not dist.log  # a log scale is handed over as log10


def test_a_parameter_without_a_domain_read_on_a_log_scale_is_its_log10():
    dist = axis(None, [1e-5, 1e-1], log=True).distribution
    assert (dist.low, dist.high) == pytest.approx((-5, -1))


# ---- without Optuna or scikit-learn: a note each, and permutation importance still works ----


def test_without_optuna_each_evaluator_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    trials = search(20, "x")
    found = evaluate(trials, PARAMS, "max")
    assert [e.shares for e in found] == [(), ()]
    assert [e.note for e in found] == [
        f'{label} needs Optuna: pip install -e ".[importance]".' for label in LABELS
    ]
    assert importances(trials, PARAMS).params[0].param == "x"


def test_without_scikit_learn_ped_anova_still_ranks(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    fanova, ped_anova = evaluate(search(20, "x"), PARAMS, "max")
    assert fanova.shares == () and "fANOVA needs scikit-learn" in fanova.note
    assert shares(ped_anova)[0] == "x" and not ped_anova.note


# ---- a run read back: `analyze --format json` and the report --------------------------------


SPEC = """
metric: score
mode: max
experiments:
  e:
    run: my_func
    config:
      lr: {loguniform: [0.00001, 0.1]}
      x: {uniform: [0.001, 1.0]}
      act: {choice: [relu, tanh]}
"""


def test_analyze_json_gives_each_parameter_its_share_by_every_method(tmp_path):
    folder = write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"])
    (folder / "spec.yaml").write_text(SPEC)
    exp = results.read_experiment(folder)
    assert set(spec_domains(exp)) == {"lr", "x", "act"}
    found = json.loads(analyze.render([exp], "json", importance=True))[0]["importance"]
    assert list(found["params"])[0] == "lr"
    assert set(found["params"]) == {"lr", "x", "act"}  # never the seed
    for method in ("permutation", "fanova", "ped_anova"):
        assert max(found["params"], key=lambda p: found["params"][p][method]) == "lr", found
        assert sum(v[method] for v in found["params"].values()) == pytest.approx(1, abs=1e-3)
        assert found["notes"][method] == ""
    assert found["trials"] == 20 and found["fit"] > 0.5


def test_analyze_json_fits_no_model_unless_asked(tmp_path, monkeypatch, cli):
    """Fitting the models takes seconds: a script reading `analyze --format json` does not pay
    for them unless it asks (`--importance`); the table is refused the flag."""
    folder = write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"])
    exp = results.read_experiment(folder)
    monkeypatch.setattr(imports_run, "of_run", lambda exp: pytest.fail("fitted unasked"))
    assert json.loads(analyze.render([exp], "json"))[0]["importance"] is None
    refused = cli("analyze", folder, "--importance")
    assert refused.code == 2 and "--importance goes with --format json" in refused.err


def test_a_run_whose_spec_is_lost_gets_distributions_from_its_values(tmp_path):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"]))
    assert spec_domains(exp) == {}
    found = of_run(exp)
    assert found is not None and found.params[0] == "lr"
    assert all(e.shares and e.shares[0][0] == "lr" for e in found.evaluated), found


def test_analyze_json_without_optuna_says_why_and_keeps_permutation(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"]))
    found = json.loads(analyze.render([exp], "json", importance=True))[0]["importance"]
    assert found["params"]["lr"]["permutation"] > 0.5
    assert found["params"]["lr"]["fanova"] is None and found["params"]["lr"]["ped_anova"] is None
    assert found["notes"]["fanova"] == 'fANOVA needs Optuna: pip install -e ".[importance]".'
    assert "PED-ANOVA needs Optuna" in found["notes"]["ped_anova"]


def test_the_report_shows_every_method_a_column_each(tmp_path):
    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"]))
    section = report._section(exp, (), "files")
    assert section.importance is not None
    assert section.importance.methods == LABELS
    first = section.importance.rows[0]
    assert first.param == "lr" and len(first.others) == 2
    assert all(cell.endswith("%") for cell in (first.share, *first.others))
    html = report.render(report.Page("t", "s", "now", (section,)))
    assert "<th>fANOVA</th><th>PED-ANOVA</th>" in html and "PED-ANOVA, how differently" in html


def test_analyze_json_has_no_importance_without_a_searched_parameter(tmp_path):
    trials = [({"seed": i}, float(i)) for i in range(8)]
    exp = results.read_experiment(write_search(tmp_path / "e", trials))
    assert json.loads(analyze.render([exp], "json", importance=True))[0]["importance"] is None


# ---- LCBench: the evaluators against the surrogate's own importance ----------------------------
#
# The surrogate's own importance, two ways, from the surrogate alone:
# - global, what fANOVA and permutation importance estimate: each parameter's main effect, the
#   variance of the mean score within 20 equal-count bins of it (each integer value of an
#   integer one) over 20,000 configurations drawn as the spec draws them, as a share of the
#   score's variance (a first-order Sobol index);
# - local, what PED-ANOVA looks for: the range of the score when one parameter runs over its
#   whole range (50 points) and the others stay at the best of 2,000 drawn configurations.

LCBENCH_TASK = "167168"  # the lcbench trainable's default


def lcbench_draw(rng, n: int) -> list[dict]:
    """`n` configurations drawn as search_spaces/lcbench.yaml draws them (log where it says)."""
    from trainables import lcbench

    found = []
    for _ in range(n):
        config = {}
        for key, (low, high, log, integer) in lcbench.SPACE.items():
            upper = high + 1 if integer else high  # as randint [1, 6) draws 1 to 5
            drawn = rng.uniform(math.log(low), math.log(upper)) if log else rng.uniform(low, upper)
            value = math.exp(drawn) if log else drawn
            config[key] = min(int(value), int(high)) if integer else value
        found.append(config)
    return found


def lcbench_scores(task: str, configs: list[dict]):
    """Each configuration's val_accuracy after 52 epochs, by the surrogate."""
    from trainables import lcbench

    model = lcbench.surrogate(str(lcbench.locate()))
    return model.curves(task, configs, [lcbench.EPOCHS])[:, 0, 1]


def main_effects(task: str, n: int = 20_000, bins: int = 20) -> dict[str, float]:
    """Each parameter's main effect on the surrogate's score, as a share of its variance."""
    import numpy as np

    from trainables import lcbench

    configs = lcbench_draw(random.Random(7), n)
    y = lcbench_scores(task, configs)
    found = {}
    for key, (*_, integer) in lcbench.SPACE.items():
        x = np.array([c[key] for c in configs], float)
        groups = [x == v for v in np.unique(x)] if integer else None
        order = np.argsort(x, kind="stable")
        parts = [y[g] for g in groups] if groups else [y[i] for i in np.array_split(order, bins)]
        found[key] = float(sum(len(p) * (p.mean() - y.mean()) ** 2 for p in parts) / n / y.var())
    return found


def ranges_at_best(task: str, points: int = 50) -> dict[str, float]:
    """How far the surrogate's score moves as each parameter alone runs over its range, the
    others at the best of 2,000 drawn configurations."""
    import numpy as np

    from trainables import lcbench

    pool = lcbench_draw(random.Random(8), 2000)
    best = pool[int(np.argmax(lcbench_scores(task, pool)))]
    found = {}
    for key, (low, high, log, integer) in lcbench.SPACE.items():
        grid = np.geomspace(low, high, points) if log else np.linspace(low, high, points)
        values = sorted({round(g) for g in grid}) if integer else list(grid)
        y = lcbench_scores(task, [{**best, key: v} for v in values])
        found[key] = float(y.max() - y.min())
    return found


def lcbench_trials(task: str, n: int, seed: int) -> list[TrialOutcome]:
    """A random search of `n` trials on the surrogate, scored by val_accuracy at epoch 52."""
    configs = lcbench_draw(random.Random(seed), n)
    scores = lcbench_scores(task, configs)
    return [outcome(i, float(s), **c) for i, (c, s) in enumerate(zip(configs, scores, strict=True))]


def lcbench_domains() -> dict[str, Domain]:
    from tune_app.space import outer_domains
    from tune_app.spec.resolve import load

    (exp,) = load(ROOT / "search_spaces" / "lcbench.yaml").experiments
    return dict(outer_domains(exp.config))


def rank_of(param: str, ranked: list[str]) -> int:
    return ranked.index(param) + 1


@pytest.mark.skipif(
    not installed("onnxruntime") or not LCBENCH_SHARED.is_dir(),
    reason="needs onnxruntime (the bench extra) and the shared LCBench data",
)
def test_on_lcbench_the_evaluators_rank_the_surrogates_own_top_parameter_at_the_top():
    own = main_effects(LCBENCH_TASK)
    local = ranges_at_best(LCBENCH_TASK)
    top, local_top = max(own, key=own.__getitem__), max(local, key=local.__getitem__)
    assert top == local_top == "learning_rate", (own, local)  # this task's, both ways
    trials = lcbench_trials(LCBENCH_TASK, 100, seed=1)
    params = list(lcbench_domains())
    logs = ["batch_size", "learning_rate", "max_units"]
    fanova, ped_anova = evaluate(trials, params, "max", lcbench_domains(), logs)
    permutation = [i.param for i in importances(trials, params, logs).params]
    assert rank_of(top, shares(fanova)) == 1, fanova
    assert rank_of(local_top, shares(ped_anova)) == 1, ped_anova
    assert rank_of(top, permutation) == 1, permutation
    # and the runner-up of the surrogate's main effects near the top of fANOVA's
    second = sorted(own, key=own.__getitem__)[-2]
    assert rank_of(second, shares(fanova)) <= 3, (own, fanova)


def test_a_broken_optuna_is_a_note_that_says_how_to_reinstall_it(monkeypatch):
    import tune_app.readback.importance.optuna_evaluators as evaluators

    def broken(*args):
        raise ImportError(
            "cannot import name 'study' from partially initialized module", name="optuna"
        )

    monkeypatch.setattr(evaluators, "_quiet", broken)
    found = evaluate(search(20, "x"), PARAMS, "max")
    assert all(e.shares == () and "could not import optuna" in e.note for e in found), found
    assert all("pip install --force-reinstall --no-deps optuna" in e.note for e in found)


def test_past_a_thousand_trials_the_trees_learn_from_a_seeded_sample(monkeypatch):
    """The trees' cost grows with the trials (a 10,000-trial report spent minutes on them):
    past MAX_TRIALS they learn from a seeded sample, which the note names."""
    from tune_app.readback.importance import permutation

    monkeypatch.setattr(permutation, "MAX_TRIALS", 40)
    trials = search(100, "lr")
    found = importances(trials, ["x", "lr", "layers"], log_scaled=["lr"])
    assert found.params[0].param == "lr"
    assert found.trials == 100
    assert "Learnt from a random 40 of the 100 scored trials." in found.note
    assert importances(trials, ["x", "lr", "layers"], log_scaled=["lr"]) == found  # seeded
    assert "random" not in importances(trials[:40], ["x", "lr", "layers"]).note
    if installed("optuna"):  # Optuna's evaluators learn from the same sample
        for e in evaluate(trials, ["x", "lr", "layers"], "max", log_scaled=["lr"]):
            assert e.trials == 40 and "Learnt from a random 40 of the 100" in e.note, e
            assert e.shares[0][0] == "lr", e


def test_a_large_run_ranks_in_a_process_of_its_own_as_it_would_here(tmp_path, monkeypatch):
    import concurrent.futures

    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"]))
    here = of_run(exp, ["lr"])
    real, pools = concurrent.futures.ProcessPoolExecutor, []

    def counted(*args, **kwargs):
        pools.append(kwargs["mp_context"].get_start_method())
        return real(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counted)
    assert imports_run.begun(exp, ["lr"])() == here  # under BESIDE_FROM_TRIALS: here
    assert pools == []
    monkeypatch.setattr(imports_run, "BESIDE_FROM_TRIALS", 10)
    beside = imports_run.begun(exp, ["lr"])
    assert pools == ["spawn"]
    assert beside() == here and here is not None and here.params[0] == "lr"


def test_a_process_that_dies_is_done_again_here(tmp_path, monkeypatch):
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool

    class Dead:
        def __init__(self, *args, **kwargs):
            pass

        def submit(self, *args):
            future: concurrent.futures.Future = concurrent.futures.Future()
            future.set_exception(BrokenProcessPool("killed"))
            return future

        def shutdown(self, wait=True):
            pass

    exp = results.read_experiment(write_search(tmp_path / "e", lr_search(20), log_scaled=["lr"]))
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Dead)
    monkeypatch.setattr(imports_run, "BESIDE_FROM_TRIALS", 10)
    assert imports_run.begun(exp, ["lr"])() == of_run(exp, ["lr"])


def test_a_live_page_learns_its_importances_again_only_as_the_trials_grow(tmp_path, monkeypatch):
    """`Kept`: a live page rewritten every few seconds computes its importances again once its
    scored trials have grown by REFRESH_GROWTH (or a rewritten run has fewer), else shows what
    it showed, which says from how many trials it was learnt."""
    fitted = []
    real = imports_run.of_run

    def counting(exp, log_scaled=None):
        fitted.append(len(exp.trials))
        return real(exp, log_scaled)

    monkeypatch.setattr(imports_run, "of_run", counting)
    kept = imports_run.Kept()
    runs = {n: results.read_experiment(write_search(tmp_path / f"{n}" / "e", lr_search(n)))
            for n in (20, 21, 22, 19)}  # fmt: skip
    first = kept.begun(runs[20], ["lr"])()
    assert first is not None and first.permutation.trials == 20 and fitted == [20]
    assert kept.begun(runs[21], ["lr"])() is first  # 5% more: as shown
    assert fitted == [20]
    assert kept.begun(runs[22], ["lr"])().permutation.trials == 22  # 10% more: again
    assert kept.begun(runs[19], ["lr"])().permutation.trials == 19  # fewer: again
    assert fitted == [20, 22, 19]
    assert report_with(kept, runs[20], tmp_path) == 19  # the page passes its Kept on
    assert fitted == [20, 22, 19]


def report_with(kept, exp, tmp_path) -> int:
    """How many trials the importances of `exp`'s page were learnt from, written with `kept`."""
    shown = []
    real = kept.begun

    def begun(exp, log_scaled=None):
        got = real(exp, log_scaled)
        return lambda: shown.append(got()) or shown[-1]

    kept.begun = begun
    report.write([exp], tmp_path / "page.html", "src", importances=kept)
    return shown[-1].permutation.trials
