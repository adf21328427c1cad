"""Search power: PBT and PB2 (a mutation reaches the code that uses it, clones recorded and
shown), Optuna's samplers (seeded, a study file per experiment) and BOHB (paired with its
HyperBand)."""

from __future__ import annotations

import json
import logging

import pytest

from tune_app import spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.rundir.location import RunLocation

from .conftest import BOHB_RANGES, refused, results_of, user_module

PBT = """
metric: value
mode: max
seed: 3
search: random
scheduler:
  type: pbt
  perturbation_interval: 2
  quantile_fraction: 0.5
  resample_probability: 1.0
  synch: true  # every perturbation sees all four (see the PPO test below)
  hyperparam_mutations:
    lr: {uniform: [0.0, 1.0]}
experiments:
  climb:
    run: pbt_climb:train
    num_samples: 4
    stop: {training_iteration: 8}
    config:
      lr: {uniform: [0.0, 1.0]}
"""


def rows_of(folder):
    rows = results_of(folder)
    by_trial: dict[str, dict[int, dict]] = {}
    for row in rows:
        by_trial.setdefault(row["trial_id"], {})[row["training_iteration"]] = row
    return by_trial


def after_clone(trial_rows: dict[int, dict], clone: dict) -> list[dict]:
    """A trial's results logged after a clone (a clone near the end may have none). The result
    that triggered the clone is logged just after it (Tune runs callbacks after the
    scheduler's decision) and still ran with the old config: it is left out."""
    later = sorted(
        (r for r in trial_rows.values() if r["logged_at"] > clone["logged_at"]),
        key=lambda r: r["logged_at"],
    )
    if later and later[0]["training_iteration"] == clone["iteration"]:
        later = later[1:]
    return later


@pytest.mark.slow  # an in-process run: the second tier
def test_pbt_mutations_reach_the_trainable_and_clones_are_recorded(
    ray_session, cli, write_spec, tmp_path
):
    user_module("pbt_climb.py", tmp_path)
    spec_file = write_spec(PBT)
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    folder = tmp_path / "o" / "climb"
    clones = [json.loads(x) for x in (folder / "clones.jsonl").read_text().splitlines()]
    assert clones, "4 trials, the bottom half copies the top half every 2 iterations"
    rows = rows_of(folder)
    last = {}
    for clone in clones:
        assert clone["trial_id"] != clone["from_trial"]
        assert set(clone["changed"]) == {"lr"}  # resample_probability 1: always redrawn
        last[clone["trial_id"]] = clone
    checked = 0
    for trial_id, clone in last.items():
        before, after = clone["changed"]["lr"]
        # Every result after its last clone: the new lr is what the trainable read...
        later = after_clone(rows[trial_id], clone)
        assert all(r["lr_seen"] == pytest.approx(after) for r in later) and before != after
        checked += bool(later)
    assert checked, "some trial went on after a clone"
    for trial_rows in rows.values():
        # ...and it went on from the copied checkpoint, not from scratch.
        assert all(r["step"] == i for i, r in trial_rows.items())
    summary = {
        t["trial_id"]: t for t in json.loads((folder / "summary.json").read_text())["trials"]
    }
    for trial_id, clone in last.items():  # each trial ends with the values it ran with last
        assert summary[trial_id]["params"]["lr"] == pytest.approx(clone["changed"]["lr"][1])
    shown = json.loads(cli("analyze", folder, "--format", "json").out)[0]
    assert len(shown["clones"]) == len(clones)
    assert shown["clones"][0]["changed"]["lr"] == clones[0]["changed"]["lr"]
    text = cli("analyze", folder).out
    first = clones[0]
    assert f"clone: {first['trial_id']} at iteration {first['iteration']} copied" in text
    assert cli("report", folder).code == 0
    html = (folder / "report.html").read_text()
    assert html.count("copied") == len(clones)


@pytest.mark.e2e  # RLlib trains end to end; the first tier keeps test_ppo_runs_through_the_cli
def test_pbt_mutates_an_rllib_learners_learning_rate(ray_session, cli, write_spec, tmp_path):
    spec_file = write_spec("""
seed: 1
search: random
scheduler:
  type: pbt
  perturbation_interval: 2
  quantile_fraction: 0.5
  resample_probability: 1.0
  # All at once: unsynchronised, the worse trial may reach a perturbation before the better one
  # has saved a checkpoint, and PBT then skips the copy (a CI run saw no clone in 8 iterations).
  synch: true
  hyperparam_mutations:
    lr: {loguniform: [1.0e-5, 1.0e-2]}
experiments:
  ppo:
    run: PPO
    env: CartPole-v1
    num_samples: 2
    # One perturbation, at 2: the worse trial copies, and trains 2 iterations on after it. (A
    # perturbation stops trials and starts them anew, each start a new algorithm: most of the
    # test's time, 155 s for perturbations at 2, 4 and 6, 81 s for one, on a busy machine.)
    stop: {training_iteration: 4}
    config:
      lr: {loguniform: [1.0e-5, 1.0e-2]}
      train_batch_size: 128
      minibatch_size: 64
      num_epochs: 1
      num_env_runners: 0
""")
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    folder = tmp_path / "o" / "ppo"
    clones = [json.loads(x) for x in (folder / "clones.jsonl").read_text().splitlines()]
    assert clones
    rows = rows_of(folder)
    last = {clone["trial_id"]: clone for clone in clones}  # rows after a trial's last clone
    checked = 0
    for clone in last.values():
        before, after = clone["changed"]["lr"]
        learner = [
            r["learners"]["default_policy"]["default_optimizer_learning_rate"]
            for r in after_clone(rows[clone["trial_id"]], clone)
        ]
        # The learner's optimizer runs with the mutated lr, not the restored checkpoint's.
        assert all(lr == pytest.approx(after) for lr in learner), (clone, learner)
        assert before != pytest.approx(after)
        checked += bool(learner)
    assert checked, "some trial trained on after a clone"


def plan_of(write_spec, text, tmp_path):
    return make_plan(spec.load(write_spec(text)), cpus=2, storage_path=str(tmp_path / "o"))


def test_mutated_keys_are_searched_values(write_spec, tmp_path):
    """A key PBT mutates is a value trials end up differing in, whether or not the config
    samples it: analyze shows it and best writes each trial's own."""
    text = PBT.replace(
        "  hyperparam_mutations:\n    lr: {uniform: [0.0, 1.0]}",
        "  hyperparam_mutations:\n    lr: {uniform: [0.0, 1.0]}\n    c: [1, 2]\n"
        "    opt: {mom: {uniform: [0.8, 0.99]}, decay: [0.1, 0.2]}",
    )
    assert "c: [1, 2]" in text
    user_module("pbt_climb.py", tmp_path)
    (ep,) = plan_of(write_spec, text, tmp_path).experiments
    assert ep.searched == ("lr", "c", "opt.mom", "opt.decay")


@BOHB_RANGES
def test_bohb_comes_with_its_hyperband_and_refuses_another(write_spec, tmp_path):
    text = """
metric: score
mode: max
search: bohb
experiments:
  e:
    run: quadratic:train
    num_samples: 4
    config: {x: {uniform: [0, 1]}, y: {uniform: [0, 1]}}
"""
    user_module("quadratic.py", tmp_path)
    (ep,) = plan_of(write_spec, text, tmp_path).experiments
    assert ep.experiment.scheduler.type == "hyperband"
    with pytest.raises(SpecError) as raised:
        plan_of(write_spec, text.replace("search: bohb", "search: bohb\nscheduler: asha"), tmp_path)
    assert "search bohb works only with scheduler hyperband, not asha" in str(raised.value)
    assert "scheduler:" in str(raised.value)


@pytest.mark.parametrize(
    ("scheduler", "message"),
    [
        ("{type: pbt, hyperparam_mutations: {lr: {grid_search: [1, 2]}}}", "not a grid"),
        ("{type: pbt, hyperparam_mutations: {lr: {uniform: [1]}}}", "uniform takes 2 arguments"),
        ("{type: pbt}", "hyperparam_mutations"),
        ("{type: pb2, hyperparam_bounds: {lr: [0.5, 0.1]}}", "low below high"),
        ("{type: pbt, hyperparam_mutations: {lrr: [0.1, 0.2]}}", "no config key 'lrr'"),
    ],
)
def test_population_schedulers_refuse_bad_options(write_spec, tmp_path, scheduler, message):
    text = f"""
scheduler: {scheduler}
experiments:
  e:
    run: es_cartpole
    config: {{lr: 0.1}}
"""
    with pytest.raises(SpecError, match=message):
        plan_of(write_spec, text, tmp_path)


def test_pbt_refuses_a_trainable_that_saves_no_checkpoints(write_spec, tmp_path):
    text = """
scheduler: {type: pbt, hyperparam_mutations: {alpha: [0.1, 0.2]}}
experiments:
  e: {run: my_func, config: {alpha: 0.1}}
"""
    with pytest.raises(SpecError, match="copies checkpoints between trials, but trainable"):
        plan_of(write_spec, text, tmp_path)


SAMPLED = """
metric: score
mode: max
seed: 7
search: {search}
experiments:
  e:
    run: quadratic:train
    num_samples: 4
    max_concurrent_trials: 1
    config: {{x: {{uniform: [0, 1]}}, y: {{uniform: [0, 1]}}, steps: 2}}
"""


@pytest.mark.slow  # an in-process run: the second tier
def test_optuna_is_seeded_and_keeps_its_study_beside_the_results(
    ray_session, cli, write_spec, tmp_path
):
    import optuna

    from tune_app.methods import optuna_study

    user_module("quadratic.py", tmp_path)
    spec_file = write_spec(SAMPLED.format(search="{type: optuna, sampler: qmc}"))
    drawn = []
    for run in ("a", "b"):
        assert cli("run", spec_file, "--storage-path", tmp_path / run, "-q").code == 0
        frame = json.loads(cli("analyze", tmp_path / run / "e", "--format", "json").out)[0]
        drawn.append(sorted((t["params"]["x"], t["params"]["y"]) for t in frame["trials"]))
        study = optuna.load_study(
            study_name="e", storage=optuna_study.study_storage(RunLocation(tmp_path / run / "e"))
        )
        assert len([t for t in study.trials if t.value is not None]) == 4
    assert drawn[0] == drawn[1] and len(set(drawn[0])) == 4  # seeded: the same 4 draws


@pytest.mark.slow  # the first tier runs BOHB's searcher and brackets in test_wrapping's units
@BOHB_RANGES
def test_bohb_runs_its_brackets(ray_session, cli, write_spec, tmp_path):
    user_module("quadratic.py", tmp_path)
    text = SAMPLED.format(search="bohb").replace("steps: 2", "steps: 9")
    text = text.replace("num_samples: 4", "num_samples: 6")
    spec_file = write_spec(text + "    scheduler: {type: hyperband, max_t: 9}\n")
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    shown = json.loads(cli("analyze", tmp_path / "o" / "e", "--format", "json").out)[0]
    assert shown["counts"] == {"TERMINATED": 6}
    assert any(t["stopped_early"] for t in shown["trials"])  # HyperBand cut the weaker ones
    # hpbandster's dumps of its KDEs on a non-finite expected improvement are not shown
    assert logging.getLogger("hpbandster").getEffectiveLevel() == logging.ERROR


@pytest.mark.parametrize(
    "scheduler", ["{type: hyperband, max_t: 8, reduction_factor: 2}", "asha", "median", "pbt"]
)
def test_schedulers_skip_results_without_the_metric(
    ray_session, cli, write_spec, tmp_path, scheduler
):
    """RLlib leaves the return out of an iteration in which no episode finished; no scheduler
    may crash or fail a trial on that (HyperBand's halving read the missing key)."""
    user_module("gappy.py", tmp_path)
    if scheduler == "pbt":
        scheduler = "{type: pbt, perturbation_interval: 2, hyperparam_mutations: {x: [1, 2, 3]}}"
    spec_file = write_spec(f"""
metric: score
mode: max
scheduler: {scheduler}
experiments:
  e:
    run: gappy:train
    config: {{x: {{grid_search: [1, 2, 3]}}}}
""")
    result = cli("run", spec_file, "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 3}
    assert summary["best"]["params"]["x"] == 3 or scheduler.startswith("{type: pbt")


def test_a_clone_record_torn_by_a_kill_does_not_swallow_the_next(tmp_path):
    """A driver killed mid-write leaves half a line; `resume` appends the next clone after it.
    Glued to the torn line, that record was lost too. The clone file is mirrored to cloud
    storage with the app's other files (pulling a cloud run replaces the staging folder)."""
    from tune_app.rundir.files import cut_torn_tail
    from tune_app.rundir.layout import CLONES_FILE
    from tune_app.rundir.storage import APP_FILES

    path = tmp_path / CLONES_FILE
    whole = json.dumps({"trial_id": "a", "from_trial": "b", "iteration": 4}) + "\n"
    path.write_text(whole + '{"trial_id": "c", "from_tri')
    cut_torn_tail(path)
    with path.open("a") as f:
        f.write(json.dumps({"trial_id": "d", "from_trial": "b", "iteration": 8}) + "\n")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["trial_id"] for r in rows] == ["a", "d"]
    cut_torn_tail(path)  # whole lines are kept as they are
    assert len(path.read_text().splitlines()) == 2
    assert CLONES_FILE in APP_FILES


class Exploits:
    """PBT's exploits of fake trials, logged by the app's scheduler as Tune would call it: a
    trial takes a donor's checkpoint and a new `lr` at its iteration; a trial (re)started from a
    checkpoint reports `iterations_since_restore` 1 first."""

    def __init__(self, folder):
        self.folder = folder
        self.driver()

    def driver(self):
        """A new driver process (a resume): a new scheduler, with no memory of the last one."""
        from ray import tune

        from tune_app.ray_internals.population import AppPBT
        from tune_app.rundir.location import RunLocation

        self.pbt = AppPBT(
            RunLocation(self.folder),
            metric="value",
            mode="max",
            hyperparam_mutations={"lr": tune.uniform(0, 1)},
            require_attrs=False,  # the restart results below carry no metric: no decision
        )

    def trial(self, trial_id, lr):
        from types import SimpleNamespace

        where = str(self.folder)
        return SimpleNamespace(
            trial_id=trial_id,
            config={"lr": lr},
            last_result={},
            local_experiment_path=where,
            local_dir=where,
        )

    def exploit(self, trial, iteration, donor, lr):
        from types import SimpleNamespace

        def state(t, at):
            return SimpleNamespace(orig_tag=t.trial_id, last_result={"training_iteration": at})

        new_config = {**donor.config, "lr": lr}
        self.pbt._log_config_on_step(
            state(trial, iteration), state(donor, iteration - 2), trial, donor, new_config
        )
        trial.config = new_config  # as Tune's exploit goes on to do

    def restart(self, trial, iteration):
        result = {"training_iteration": iteration, "iterations_since_restore": 1}
        self.pbt.on_trial_result(None, trial, result)

    def logged(self):
        path = self.folder / "clones.jsonl"
        return [
            (c["trial_id"], c["iteration"], c["changed"].get("lr", [0, None])[1])
            for c in _lines(path)
        ]


def _lines(path):
    text = path.read_text()
    assert text.endswith("\n")  # whole lines
    return [json.loads(line) for line in text.splitlines()]


def test_a_clone_decided_again_after_a_resume_is_logged_once(tmp_path):
    """Killed after PBT logged an exploit and before Tune saved it, a resumed run restores the
    trial as saved (its old config and checkpoint), and PBT may decide the exploit again on the
    replayed iteration. It was logged twice."""
    run = Exploits(tmp_path)
    a, b, c = run.trial("a", 0.1), run.trial("b", 0.9), run.trial("c", 0.2)
    run.exploit(c, 2, b, lr=0.8)  # saved: c restarts with it
    run.exploit(a, 4, b, lr=0.7)  # lost with the driver
    run.driver()
    a.config, c.config = {"lr": 0.1}, {"lr": 0.8}  # as Tune restores them
    run.restart(c, 5)
    run.restart(a, 4)
    assert run.logged() == [("c", 2, 0.8)]  # not run.exploit(a, 4): the timeline lost it
    run.exploit(a, 4, b, lr=0.6)  # decided again
    assert run.logged() == [("c", 2, 0.8), ("a", 4, 0.6)]


def test_a_trial_restarted_onto_its_exploit_keeps_it(tmp_path):
    """An exploit restarts the trial from the donor's checkpoint (earlier than its own: it
    replays iterations), and a retry or a resume restores it with the exploit's config: the
    record stays."""
    run = Exploits(tmp_path)
    a, b = run.trial("a", 0.1), run.trial("b", 0.9)
    run.exploit(a, 4, b, lr=0.7)
    run.restart(a, 3)  # from b's iteration-2 checkpoint
    run.driver()
    run.restart(a, 4)  # resumed from its own checkpoint at 3
    assert run.logged() == [("a", 4, 0.7)]


def test_a_clone_of_the_same_trial_and_iteration_replaces_the_record(tmp_path):
    """A clone that changed nothing leaves the restart nothing to tell by; logged again at the
    same (trial, iteration), the new record replaces the old, whatever came between."""
    run = Exploits(tmp_path)
    a, b, c = run.trial("a", 0.5), run.trial("b", 0.9), run.trial("c", 0.3)
    run.exploit(a, 4, b, lr=0.5)  # the same lr: nothing changed
    run.exploit(c, 4, b, lr=0.4)
    (tmp_path / "clones.jsonl").open("a").write('{"trial_id": "a", "from_tr')  # killed mid-line
    run.driver()
    run.restart(a, 4)
    run.exploit(a, 4, c, lr=0.2)
    assert run.logged() == [("c", 4, 0.4), ("a", 4, 0.2)]
    assert _lines(tmp_path / "clones.jsonl")[-1]["from_trial"] == "c"


def test_a_trial_exploiting_twice_at_one_iteration_keeps_both_records(tmp_path):
    """Moved onto a donor's checkpoint from its own iteration or before, a trial reaches that
    iteration again, and PBT may exploit it again there: two clones at one (trial, iteration),
    the second from the lr the first set, or from one an exploit in between set. The second
    replaced the first, so the rows run with the first's lr had no record; a resume's replay,
    deciding again from the lr before, still replaces what it decides again."""
    run = Exploits(tmp_path)
    a, b, c = run.trial("a", 0.1), run.trial("b", 0.9), run.trial("c", 0.4)
    run.exploit(a, 8, b, lr=0.287)
    run.restart(a, 5)  # from b's checkpoint at 4: iterations 5 to 8 again, with 0.287
    run.exploit(a, 6, c, lr=0.4)
    run.restart(a, 6)  # from c's checkpoint at 5
    run.exploit(a, 8, b, lr=0.6)
    run.restart(a, 8)  # from b's checkpoint at 7
    run.exploit(a, 8, c, lr=0.7)
    assert run.logged() == [("a", 8, 0.287), ("a", 6, 0.4), ("a", 8, 0.6), ("a", 8, 0.7)]
    run.driver()
    a.config = {"lr": 0.6}  # Tune saved a after its third exploit only
    run.restart(a, 8)
    assert run.logged() == [("a", 8, 0.287), ("a", 6, 0.4), ("a", 8, 0.6)]
    run.exploit(a, 8, b, lr=0.5)  # decided again, otherwise
    assert run.logged() == [("a", 8, 0.287), ("a", 6, 0.4), ("a", 8, 0.6), ("a", 8, 0.5)]


def test_the_reader_drops_a_record_decided_again_and_keeps_a_second_exploit():
    """Files written before the writer kept to this hold a clone decided again after a resume
    beside the one it repeats; a second exploit at one iteration changing another key, or
    after one that changed nothing, is told apart by where it started."""
    from tune_app.rundir.layout import latest_clones

    def kept(*changes):
        logged = [{"trial_id": "a", "iteration": 8, "changed": c} for c in changes]
        return [e["changed"] for e in latest_clones(logged)]

    first, again = {"lr": [0.1, 0.287]}, {"lr": [0.1, 0.3]}  # both from lr 0.1
    assert kept(first, again) == [again]
    second = {"lr": [0.287, 0.6]}  # from the lr the first set
    assert kept(first, second) == [first, second]
    other_key = {"bs": [32, 64]}  # nothing says it started where the first did
    assert kept(first, other_key) == [first, other_key]
    assert kept({}, second) == [second]  # a record that changed nothing says nothing
    other_trial = {"trial_id": "b", "iteration": 8, "changed": {"lr": [0.1, 0.5]}}
    mixed = [{"trial_id": "a", "iteration": 8, "changed": first}, other_trial]
    mixed.append({"trial_id": "a", "iteration": 8, "changed": again})
    assert latest_clones(mixed) == mixed[1:]


@pytest.mark.parametrize(
    ("head", "config", "message"),
    [
        (
            "search: hyperopt\nscheduler: {type: pbt, hyperparam_mutations: {x: [1, 2]}}",
            "{x: {uniform: [0, 1]}}",
            "scheduler pbt runs with grid or random search only, not hyperopt",
        ),
        (
            "scheduler: {type: pbt, hyperparam_mutations: {x: []}}",
            "{x: 1}",
            "x: an empty list leaves nothing to pick",
        ),
        (
            "scheduler: {type: pbt, hyperparam_mutations: {x: 5}}",
            "{x: 1}",
            "x: 5 is one value, nothing to mutate to",
        ),
        ("search: optuna", "{x: {randn: [0, 1]}}", "Optuna has no normal distribution"),
        ("search: bohb", "{x: {qrandn: [0, 1, 0.5]}}", "BOHB samples bounded ranges only"),
        ("search: random", "{x: {qrandint: [1, 4, 5]}}", "no multiple of q=5 lies in [1, 4]"),
        ("search: hyperopt", "{x: {randint: [0, 1]}}", "it holds one value, 0 (upper excluded)"),
        ("search: optuna", "{x: {qloguniform: [5, 100, 5]}}", "cannot round a log-scaled range"),
        ("search: random", "{x: {qloguniform: [1, 100, 5]}}", "lower bound 1 must be a multiple"),
        ("search: random", "{o.x: 1, o: {x: {uniform: [0, 1]}}}", "'o.x' names two values"),
        # these two gave a message in pydantic's terms, or none at all
        (
            "scheduler: {type: pbt, perturbation_factors: [1.2], hyperparam_mutations: {x: [1,2]}}",
            "{x: 1}",
            "perturbation_factors: write two positive factors [up, down]",
        ),
        (
            "scheduler: {type: asha, grace_period: 5, max_t: 2}",
            "{x: 1}",
            "grace_period 5 is beyond",
        ),
    ],
)
def test_what_tune_would_refuse_mid_run_is_refused_by_validate(
    cli, write_spec, tmp_path, head, config, message
):
    """Each of these passed validate and failed once Ray had started, leaving a run folder
    that a second `run` took for an interrupted one."""
    user_module("quadratic.py", tmp_path)
    text = f"metric: score\nmode: max\n{head}\nexperiments:\n  e:\n    run: quadratic:train\n"
    result = cli("validate", write_spec(text + f"    num_samples: 2\n    config: {config}\n"))
    refused(result, message)


@pytest.mark.parametrize(
    ("mutations", "message"),
    [
        ("{lrr: {loguniform: [0.00001, 0.01]}}", "PPO has no config key 'lrr'"),
        ("{sgd_minibatch_size: [32, 64]}", "mutate minibatch_size"),
    ],
)
def test_an_rllib_mutation_must_name_a_key_the_algorithm_reads(cli, write_spec, mutations, message):
    """PBT writes a mutation into the trial's config as named: a typo, or a legacy key the app
    translates only when it loads the spec, would be mutated and logged while nothing used it."""
    text = f"""
scheduler: {{type: pbt, perturbation_interval: 2, hyperparam_mutations: {mutations}}}
experiments:
  p:
    run: PPO
    env: CartPole-v1
    num_samples: 2
    simulations: 1
    config: {{lr: 0.001}}
"""
    result = cli("validate", write_spec(text))
    assert result.code == 2 and message in result.err
    ok = cli("validate", write_spec(text.replace(mutations, "{train_batch_size: [200, 300]}")))
    assert ok.code == 0, ok.err


@BOHB_RANGES
def test_a_seeded_bohb_search_draws_the_same_configurations_again():
    """TuneBOHB seeds only its random configurations; hpbandster draws from its model with
    numpy's global generator, so two seeded runs parted once the model took over."""
    import numpy as np
    from ray import tune

    from tune_app import methods

    def draws() -> list[float]:
        entry = methods.SEARCHERS["bohb"]
        options = entry.options.model_validate({"type": "bohb", "min_points_in_model": 4})
        searcher = entry.build(options, methods.Context(seed=5))
        searcher.set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
        found = []
        for i in range(12):
            config = searcher.suggest(f"t{i}")
            found.append(config["x"])
            loss = (config["x"] - 0.3) ** 2
            searcher.on_trial_result(f"t{i}", {"loss": loss, "hyperband_info": {"budget": 9}})
            searcher.on_trial_complete(f"t{i}")
            np.random.rand()  # the driver draws from numpy's generator between suggestions
        return found

    first, second = draws(), draws()
    assert first == second
    assert len(set(first)) == 12


@pytest.mark.slow  # an in-process run: the second tier
@pytest.mark.parametrize("synch", ["true", "false"])
def test_tunes_saved_state_holds_each_exploit_before_anything_runs_with_it(
    ray_session, cli, write_spec, tmp_path, monkeypatch, synch
):
    """An exploit changes a trial's config and the checkpoint it goes on from; Tune saves that
    in its experiment state only every few seconds. Killed after the exploited trial had run an
    iteration with its new config (its row replacing the old one in results.jsonl) and before
    that save, a run was resumed from the state before the exploit: the trial went on from its
    own checkpoint with its old config, and the row of the lost iteration stayed, with no clone
    record left to explain it. Whenever the results writer sees a result, the state Tune saved
    must hold every trial's config as it is."""
    from tune_app.callbacks import JsonlResults
    from tune_app.rundir.files import jsonable
    from tune_app.rundir.layout import newest_trial_entries

    original = JsonlResults.on_trial_result
    first: dict[str, dict] = {}  # trial id -> its config at its first result
    checked_after_exploit, stale = [], []

    def checking(self, iteration, trials, trial, result, **info):
        saved = {}
        for trial_json, _ in newest_trial_entries(self.path.parent):
            state = json.loads(trial_json)
            saved[state["trial_id"]] = state["config"]
        for each in trials:
            config = jsonable(each.config)
            first.setdefault(each.trial_id, config)
            if each.trial_id in saved:
                if saved[each.trial_id] != config:
                    stale.append((each.trial_id, saved[each.trial_id], config))
                elif config != first[each.trial_id]:
                    checked_after_exploit.append(each.trial_id)
        return original(self, iteration, trials, trial, result, **info)

    monkeypatch.setattr(JsonlResults, "on_trial_result", checking)
    user_module("pbt_climb.py", tmp_path)
    spec_file = write_spec(PBT.replace("synch: true", f"synch: {synch}"))
    assert cli("run", spec_file, "--storage-path", tmp_path / "o", "-q").code == 0
    assert (tmp_path / "o" / "climb" / "clones.jsonl").exists()
    assert not stale
    assert checked_after_exploit, "a trial was seen after an exploit changed its config"
