"""Spec loading: both forms, inheritance, legacy keys, every search_spaces/ file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tune_app import methods, spec
from tune_app.errors import SpecError
from tune_app.space import Domain
from tune_app.spec.models import ExperimentSpec
from tune_app.trackers.options import TrackersSpec

from .conftest import SEARCH_SPACES, refused, user_module

CLASSIC = """
my_experiment:
  run: my_func
  env: CartPole-v1
  resources_per_trial: {cpu: 1, gpu: 0}
  num_samples: 2
  stop: {mean_accuracy: 100, training_iteration: 50}
  config:
    alpha: {grid_search: [0.2, 0.4, 0.6]}
    beta: {grid_search: [1, 2]}
other:
  run: my_func
  config: {alpha: 1, beta: 1}
"""

APP = """
metric: mean_accuracy
mode: max
search: {type: hyperopt, n_initial_points: 5}
scheduler: {type: asha, max_t: 20, grace_period: 2}
max_concurrent_trials: 4
seed: 3
storage_path: out
experiments:
  inherits:
    run: my_func
    num_samples: 8
    config:
      alpha: {uniform: [0.1, 1.0]}
  overrides:
    run: my_func
    mode: min
    search: random
    scheduler: fifo
    seed: 9
    storage_path: elsewhere
    config:
      alpha: {choice: [0.2, 0.4]}
"""


def load_text(text: str) -> spec.Spec:
    """The spec as the app reads it (YAML 1.2 numbers: `1e9` is a float, not text)."""
    return spec.parse(spec.read_yaml_text(text, Path("spec.yaml")), Path("spec.yaml"), text)


def test_classic_form_reads_every_experiment_key():
    s = load_text(CLASSIC)
    assert s.form == "classic"
    first, second = s.experiments
    assert (first.name, first.run, first.env, first.num_samples) == (
        "my_experiment",
        "my_func",
        "CartPole-v1",
        2,
    )
    assert first.stop == {"mean_accuracy": 100, "training_iteration": 50}
    assert first.resources == spec.ResourcesSpec(cpu=1, gpu=0)
    assert first.config["alpha"] == Domain("grid_search", (0.2, 0.4, 0.6))
    assert first.key_path == "my_experiment"
    # defaults where the classic form says nothing
    assert isinstance(first.search, methods.GridOptions)
    assert isinstance(first.scheduler, methods.FifoOptions)
    assert first.storage_path == "results" and first.metric is None
    assert second.config == {"alpha": 1, "beta": 1}


def test_app_form_inherits_file_settings_and_experiments_override_them():
    inherits, overrides = load_text(APP).experiments
    assert inherits.metric == "mean_accuracy" and inherits.mode == "max"
    assert inherits.search == methods.HyperOptOptions(n_initial_points=5)
    assert inherits.scheduler == methods.AshaOptions(max_t=20, grace_period=2)
    assert (inherits.max_concurrent_trials, inherits.seed, inherits.storage_path) == (4, 3, "out")
    assert inherits.key_path == "experiments.inherits"
    assert overrides.mode == "min" and overrides.metric == "mean_accuracy"
    assert overrides.search == methods.RandomOptions()
    assert overrides.scheduler == methods.FifoOptions()
    assert (overrides.seed, overrides.storage_path) == (9, "elsewhere")


@pytest.mark.parametrize(
    "written, expected",
    [
        pytest.param("hyperband", methods.HyperBandOptions(), id="hyperband"),
        pytest.param(
            "{type: hyperband, max_t: 27, reduction_factor: 3}",
            methods.HyperBandOptions(max_t=27),
            id="hyperband-options",
        ),
        pytest.param("asha", methods.AshaOptions(), id="asha"),
        pytest.param(
            "{type: median, grace_period: 2, time_attr: training_iteration}",
            methods.MedianOptions(grace_period=2, time_attr="training_iteration"),
            id="median-options",
        ),
        pytest.param("fifo", methods.FifoOptions(), id="fifo"),
    ],
)
def test_scheduler_shorthand_and_options(written, expected):
    s = load_text(
        f"scheduler: {written}\nmetric: m\nmode: max\nexperiments:\n  e: {{run: my_func}}"
    )
    assert s.experiments[0].scheduler == expected


def test_legacy_tune_keys_are_translated_with_one_warning_each():
    s = load_text("""
e:
  run: my_func
  local_dir: /tmp/old
  checkpoint_freq: 5
  checkpoint_at_end: true
  keep_checkpoints_num: 2
  checkpoint_score_attr: min-loss
  resources: {cpu: 2}
""")
    (e,) = s.experiments
    assert e.storage_path == "/tmp/old"
    assert e.checkpoint == spec.CheckpointSpec(
        checkpoint_frequency=5,
        checkpoint_at_end=True,
        num_to_keep=2,
        checkpoint_score_attribute="loss",
        checkpoint_score_order="min",
    )
    assert e.resources.cpu == 2
    assert len(s.warnings) == 5
    assert all(w.startswith("e.") and "legacy Tune key" in w for w in s.warnings)


NEVER_EVALUATED = (
    "(a spec's values are never evaluated); write a search-space mapping such as "
    "{choice: [...]}, or compute it in the trainable"
)


@pytest.mark.parametrize(
    ("config", "warning"),
    [
        pytest.param(
            "lr: 'tune.loguniform(1e-4, 1e-1)'",
            "e.config.lr: 'tune.loguniform(1e-4, 1e-1)' is a constant string; "
            "write lr: {loguniform: [1e-4, 1e-1]}",
            id="loguniform",
        ),
        pytest.param(
            "model: {act: 'ray.tune.choice([relu, tanh])'}",
            "e.config.model.act: 'ray.tune.choice([relu, tanh])' is a constant string; "
            "write act: {choice: [relu, tanh]}",
            id="choice-nested",
        ),
        pytest.param(
            "sizes: ['tune.qrandint(16, 256, 16)']",
            "e.config.sizes[0]: 'tune.qrandint(16, 256, 16)' is a constant string; "
            "write {qrandint: [16, 256, 16]}",
            id="in-a-list",
        ),
        pytest.param(
            "n: 'tune.randint(10)'",
            "e.config.n: 'tune.randint(10)' is a constant string; "
            "write n: {randint: [lower, upper]}",
            id="arguments-unlike-the-mapping",
        ),
        pytest.param(
            "b: {sample_from: 'lambda spec: spec.config.a * 2'}",
            "e.config.b: {sample_from: ...} is a constant mapping: a spec cannot hold a function; "
            "write a search-space mapping such as {choice: [...]}, or compute it in the trainable",
            id="sample_from-mapping",
        ),
        pytest.param(
            "b: 'lambda config: config[\"a\"] * 2'",
            "e.config.b: 'lambda config: config[\"a\"] * 2' is a constant string "
            + NEVER_EVALUATED,
            id="lambda",
        ),
        pytest.param(
            "b: 'tune.sample_from(lambda spec: 3)'",
            "e.config.b: 'tune.sample_from(lambda spec: 3)' is a constant string "
            + NEVER_EVALUATED,
            id="tune-sample_from",
        ),
        pytest.param(
            "b: {grid_search: ['tune.uniform(0, 1)', 2]}",
            "e.config.b.grid_search[0]: 'tune.uniform(0, 1)' is a constant string; "
            "write {uniform: [0, 1]}",
            id="a-grid-value",
        ),
    ],
)
def test_a_string_of_tune_code_is_a_constant_with_a_warning_naming_the_mapping(config, warning):
    """Such a string was run as the text it is: `lr` reached the trainable as a string."""
    s = load_text(f"e:\n  run: my_func\n  config: {{{config}}}\n")
    assert s.warnings == (warning,)


def test_strings_that_merely_start_like_code_get_no_warning():
    s = load_text(
        "e:\n  run: my_func\n  config: {a: tuned, b: lambdas, c: 'tune.x', d: 'my lambda: 1'}\n"
    )
    assert s.warnings == ()


def test_a_tune_code_warning_is_one_line_of_validate(cli, write_spec, tmp_path):
    user_module("quadratic.py", tmp_path)
    text = "e:\n  run: quadratic:train\n  config: {x: 'tune.uniform(0, 1)', y: 0.5}\n"
    result = cli("validate", write_spec(text))
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if "constant string" in line]
    assert lines == [
        "warning: e.config.x: 'tune.uniform(0, 1)' is a constant string; write x: {uniform: [0, 1]}"
    ]


QUADRATIC = "{run: quadratic:train, config: {x: {uniform: [0, 1]}, y: 0.5}}"


@pytest.mark.parametrize(
    ("text", "warned"),
    [
        pytest.param(f"e: {QUADRATIC}\n", True, id="none"),
        pytest.param(
            f"metric: score\nmode: max\nexperiments:\n  e: {QUADRATIC}\n", False, id="top"
        ),
        pytest.param(
            f"metric: [score, x]\nmode: [max, min]\nexperiments:\n  e: {QUADRATIC}\n",
            False,
            id="several",
        ),
        pytest.param("e: {run: my_func, config: {alpha: 0.5, beta: 1}}\n", False, id="declared"),
    ],
)
def test_a_search_with_no_metric_validates_with_a_warning_saying_how_to_set_one(
    cli, write_spec, tmp_path, text, warned
):
    user_module("quadratic.py", tmp_path)
    result = cli("validate", write_spec(text))
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if "nothing ranks" in line]
    assert lines == (
        [
            "warning: e.metric: none set or declared by its trainable, so nothing ranks its "
            "trials: `best` finds no best one, `analyze` and `report` rank none, and a "
            "scheduler or search that needs one is refused; set metric: and mode: at the top "
            "of the spec or in e"
        ]
        if warned
        else []
    )


def test_ray_0_and_1_experiment_keys_are_translated_or_dropped_saying_why():
    s = load_text("""
e:
  run: my_func
  repeat: 3
  trial_resources: {cpu: 2}
  local_dir: ~/ray_results
  upload_dir: s3://bucket/results
  sync_to_driver: false
  export_formats: [model]
""")
    (e,) = s.experiments
    assert (e.num_samples, e.resources.cpu, e.storage_path) == (3, 2, "s3://bucket/results")
    warned = {w.split(":")[0]: w for w in s.warnings}
    assert set(warned) == {
        f"e.{k}"
        for k in (
            "repeat",
            "trial_resources",
            "local_dir",
            "upload_dir",
            "sync_to_driver",
            "export_formats",
        )
    }
    assert "no effect beside upload_dir" in warned["e.local_dir"]
    assert "no effect" in warned["e.export_formats"] and "no effect" in warned["e.sync_to_driver"]


def test_fail_fast_and_log_to_file_reach_the_experiment_and_fail_fast_refuses_retries():
    (e,) = load_text(
        "e: {run: my_func, fail_fast: true, log_to_file: [out.txt, err.txt]}"
    ).experiments
    assert e.fail_fast is True and e.log_to_file == ("out.txt", "err.txt")
    with pytest.raises(SpecError, match="no trial is retried") as err:
        load_text("e: {run: my_func, fail_fast: true, max_failures: 2}")
    assert err.value.path == "e.fail_fast"


def test_resources_take_tunes_spellings_and_memory_and_refuse_ray_1_extra_bundles():
    (e,) = load_text(
        "e: {run: my_func, config: {alpha: 1, beta: 1},\n"
        "    resources_per_trial: {CPU: 2, GPU: 0, memory: 1e9}}"
    ).experiments
    assert (e.resources.cpu, e.resources.gpu, e.resources.memory) == (2, 0, 1e9)
    from tune_app.plan.make import make_plan

    (ep,) = make_plan(spec.Spec(Path("s.yaml"), "", "classic", (e,)), cpus=2).experiments
    assert ep.bundles == ({"CPU": 2.0, "memory": 1e9},)
    with pytest.raises(SpecError, match="extra_cpu .Ray 1.x. has no equivalent") as err:
        load_text("e: {run: my_func, resources_per_trial: {cpu: 1, extra_cpu: 2}}")
    assert err.value.path == "e.resources_per_trial"
    with pytest.raises(SpecError, match="both CPU and cpu"):
        load_text("e: {run: my_func, resources_per_trial: {cpu: 1, CPU: 2}}")


def test_alias_and_its_key_together_is_an_error():
    with pytest.raises(SpecError, match="both 'resources' and 'resources_per_trial'"):
        load_text("e: {run: my_func, resources: {cpu: 1}, resources_per_trial: {cpu: 1}}")


@pytest.mark.parametrize(
    ("keys", "words"),
    [
        ("resources_per_trial: {cpu: .inf}", "resources_per_trial.cpu: input should be a finite"),
        ("stop: {training_iteration: .inf}", "stop.training_iteration: input should be a finite"),
        ("stop: {score: .nan}", "stop.score: input should be a finite number, but got nan"),
        ("config: {x: {quniform: [0, 1, 1e-320]}}", "is too small: the upper bound 1 is beyond"),
    ],
    ids=["infinite-cpus", "infinite-stop", "nan-stop", "a-q-too-small"],
)
def test_a_number_past_what_a_float_counts_is_refused_in_one_line(cli, write_spec, keys, words):
    """Each exited 1 with OverflowError (cannot convert float infinity to integer), or passed."""
    refused(cli("validate", write_spec(f"e:\n  run: my_func\n  {keys}\n")), words)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("e:\n  run: !!python/object/apply:os.system ['echo hacked']\n", "unsupported YAML tag"),
        ("e:\n  run: my_func\n  run: other\n", "duplicate key 'run' at line 3"),
        (
            "e:\n  run: my_func\n  config:\n    x: {{grid_search: [1]}}\n",
            "a mapping is used as a key at line 4.*one pair of braces too many",
        ),
        (  # not a search space: no braces too many
            "e:\n  run: my_func\n  config: {alpha: 0.5, [1, 2]: 3}\n",
            "a list is used as a key at line 3, column 24; keys are names; a list is a value, "
            "under a name: `x: \\[1, 2\\]`$",
        ),
        ("e:\n  config: {1: 2, true: 4}\n", "duplicate key 'true' at line 2, the same key as '1'"),
    ],
    ids=["python-tag", "duplicate-key", "mapping-as-key", "list-as-key", "keys-equal-once-read"],
)
def test_yaml_that_is_not_a_plain_spec_is_a_spec_error(write_spec, text, message):
    with pytest.raises(SpecError, match=message):
        spec.load(write_spec(text))


def test_yaml_merge_keys_share_settings_and_own_keys_override_them():
    s = spec.loads(
        """
a: &defaults
  run: my_func
  stop: {training_iteration: 3}
  config: &config {alpha: 1, beta: 1}
b:
  <<: *defaults
  config:
    <<: *config
    alpha: {grid_search: [1, 2]}
""",
        "merge.yaml",
    )
    a, b = s.experiments
    assert a.stop == b.stop == {"training_iteration": 3}
    assert b.config["beta"] == 1 and b.config["alpha"] == Domain("grid_search", (1, 2))
    with pytest.raises(SpecError, match="duplicate key 'stop'"):
        spec.loads("a: &d {run: my_func}\nb:\n  <<: *d\n  stop: {x: 1}\n  stop: {x: 2}\n", "m.yaml")


@pytest.mark.parametrize("path", sorted(SEARCH_SPACES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_spec_validates_and_plans(path):
    import jsonschema

    from tune_app.plan.make import make_plan

    jsonschema.validate(yaml.safe_load(path.read_text()), spec.json_schema())
    plan = make_plan(spec.load(path), cpus=2)
    assert plan.experiments and all(ep.trials >= 1 for ep in plan.experiments)


@pytest.mark.parametrize(
    ("written", "number"),
    [
        pytest.param("1e-4", 0.0001, id="no-dot"),
        pytest.param("1E5", 100000.0, id="capital-no-sign"),
        pytest.param("2.5e3", 2500.0, id="dot-no-sign"),
        pytest.param("-3e+2", -300.0, id="signed"),
        pytest.param("1.0e-3", 0.001, id="yaml-1.1"),
    ],
)
def test_yaml_1_2_floats_are_numbers_everywhere(tmp_path, written, number):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"e:\n  run: my_func\n  stop: {{mean_accuracy: {written}}}\n"
        f"  config: {{alpha: {{uniform: [{written}, 1e9]}}, beta: {written}}}\n"
    )
    (exp,) = spec.load(path).experiments
    assert exp.stop["mean_accuracy"] == number
    assert exp.config["alpha"] == Domain("uniform", (number, 1e9))
    assert exp.config["beta"] == number and isinstance(exp.config["beta"], float)
    # Quoted text stays text.
    path.write_text("e:\n  run: my_func\n  config: {alpha: 1, beta: 1, tag: '1e-4'}\n")
    assert spec.load(path).experiments[0].config["tag"] == "1e-4"


def test_yaml_dates_stay_the_text_written(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "e:\n  run: my_func\n  config: {alpha: 1, beta: 2001-12-14, "
        "tag: {grid_search: [2001-12-14 21:59:43.10, !!timestamp 2002-01-01]}}\n"
    )
    (exp,) = spec.load(path).experiments
    assert exp.config["beta"] == "2001-12-14"
    assert exp.config["tag"] == Domain("grid_search", ("2001-12-14 21:59:43.10", "2002-01-01"))


def test_the_spec_offers_exactly_the_methods_of_the_tables():
    """Adding a searcher or scheduler is one table entry: the spec's names, its JSON Schema and
    the error's allowed list follow."""
    assert spec.SEARCHES == tuple(methods.SEARCHERS)
    assert spec.SCHEDULER_NAMES == tuple(methods.SCHEDULERS)
    schema = json.dumps(spec.json_schema())
    for name in [*methods.SEARCHERS, *methods.SCHEDULERS]:
        assert f'"{name}"' in schema
    for table in (methods.SEARCHERS, methods.SCHEDULERS):
        for name, entry in table.items():
            assert entry.name == name and entry.options.model_fields["type"].default == name


# Options a built entry needs beyond its defaults.
REQUIRED_OPTIONS = {
    "pbt": {"hyperparam_mutations": {"lr": {"uniform": [0.001, 0.1]}, "width": [8, 16]}},
    "pb2": {"hyperparam_bounds": {"lr": [0.001, 0.1]}},
}
BUILT = [
    ("SEARCHERS", "grid", "BasicVariantGenerator"),
    ("SEARCHERS", "random", "BasicVariantGenerator"),
    ("SEARCHERS", "hyperopt", "HyperOptSearch"),
    ("SEARCHERS", "optuna", "OptunaSearch"),
    ("SEARCHERS", "bohb", "TuneBOHB"),
    ("SCHEDULERS", "fifo", "FIFOScheduler"),
    ("SCHEDULERS", "hyperband", "HyperBandScheduler"),
    ("SCHEDULERS", "asha", "AsyncHyperBandScheduler"),
    ("SCHEDULERS", "median", "MedianStoppingRule"),
    ("SCHEDULERS", "pbt", "PopulationBasedTraining"),
    ("SCHEDULERS", "pb2", "PB2"),
]


def test_every_entry_has_a_build_test():
    assert {(t, n) for t, n, _ in BUILT} == {
        (t, n) for t in ("SEARCHERS", "SCHEDULERS") for n in getattr(methods, t)
    }


@pytest.mark.parametrize(("table", "name", "ray_class"), BUILT)
def test_every_entry_builds_its_tune_object(table, name, ray_class):
    entry = getattr(methods, table)[name]
    options = entry.options.model_validate({"type": name, **REQUIRED_OPTIONS.get(name, {})})
    built = entry.build(options, methods.Context(seed=3, max_concurrent_trials=2))
    assert ray_class in [c.__name__ for c in type(tunes(built)).__mro__]


def tunes(built):
    """Tune's own object inside the app's wrappers (a scheduler's `tune`, a searcher's
    `searcher`)."""
    built = getattr(built, "tune", built)
    while hasattr(built, "searcher"):
        built = built.searcher
    return built


def test_bohb_gets_hyperband_for_bohb():
    entry = methods.SCHEDULERS["hyperband"]
    built = entry.build(entry.options.model_validate({}), methods.Context(searcher="bohb"))
    assert "HyperBandForBOHB" in [c.__name__ for c in type(tunes(built)).__mro__]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("010", 10, id="leading-zero-is-decimal"),
        pytest.param("0o10", 8, id="octal-as-1.2-writes-it"),
        pytest.param("0x1F", 31, id="hex"),
        pytest.param("1_000", 1000, id="grouped-digits"),
        pytest.param("1:30", "1:30", id="no-base-60"),
        pytest.param("1e-4", 1e-4, id="exponent-without-dot"),
        pytest.param("1E5", 1e5, id="exponent-without-sign"),
        pytest.param("-.inf", float("-inf"), id="infinity"),
        pytest.param("12", 12, id="int-stays-int"),
    ],
)
def test_numbers_are_read_as_yaml_1_2_reads_them(tmp_path, text, value):
    from tune_app.spec.loading import read_yaml

    path = tmp_path / "spec.yaml"
    path.write_text(f"a: {text}\n")
    read = read_yaml(path)[1]["a"]
    assert read == value and type(read) is type(value)


def test_a_base_60_time_limit_is_refused_not_read_as_seconds(cli, write_spec):
    result = cli(
        "validate",
        write_spec("e:\n  run: my_func\n  scheduler: {type: asha, max_t: 1:30}\n"),
    )
    assert result.code == 2 and "e.scheduler.max_t" in result.err, result.err


def test_an_experiment_may_be_named_in_any_script(cli, write_spec):
    result = cli(
        "validate", write_spec("实验一:\n  run: my_func\n  config: {alpha: 0.5, beta: 1}\n")
    )
    assert result.code == 0, result.err
    assert "实验一" in result.out


def test_the_reserved_experiment_name_is_the_smoke_folder():
    from tune_app.rundir.location import SMOKE_FOLDER
    from tune_app.spec.resolve import RESERVED_NAME

    assert RESERVED_NAME == SMOKE_FOLDER


def _number_keys(
    model: type, path: tuple[str, ...] = (), kinds: tuple[type, ...] = (int, float)
) -> dict[str, type]:
    """Every key of the spec's own models (an experiment, the file-level settings it may
    override, a tracker's or a searcher's or scheduler's options) that takes a number (or one of
    `kinds`), as a YAML key path -> its type: found from the models, so a key added later is
    covered too. An experiment's `search:` and `scheduler:` are walked per table entry
    (`OPTION_KEYS`), as their keys depend on the `type`."""
    import types
    import typing

    from tune_app.spec.models import ExpectSpec, _Strict
    from tune_app.trackers.options import _Options

    def leaves(t: object, where: tuple[str, ...]) -> dict[str, type]:
        while typing.get_origin(t) is typing.Annotated:
            t = typing.get_args(t)[0]
        if typing.get_origin(t) in (typing.Union, types.UnionType):
            return {k: v for m in typing.get_args(t) for k, v in leaves(m, where).items()}
        if t in kinds:
            return {".".join(where): t}  # type: ignore[dict-item]
        if typing.get_origin(t) is dict:
            return leaves(typing.get_args(t)[1], (*where, "k"))
        if isinstance(t, type) and issubclass(t, _Strict | _Options):
            return _number_keys(t, where, kinds)
        return {}

    found: dict[str, type] = {}
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        # `expect`'s metrics are written beside max_errored_trials, not under `metrics`.
        where = path if model is ExpectSpec and name == "metrics" else (*path, name)
        if not field.exclude and name != "type":
            found.update(leaves(field.annotation, where))
    return found


def _nested(path: str, value: object) -> dict[str, object]:
    *parents, key = path.split(".")
    out: dict[str, object] = {key: value}
    for parent in reversed(parents):
        out = {parent: out}
    return out


NUMBER_KEYS = _number_keys(ExperimentSpec)
NOT_NUMBERS = [
    pytest.param(True, "true", id="true"),
    pytest.param(False, "false", id="false"),
    pytest.param("4", "'4'", id="text"),
    pytest.param("1e-3", "'1e-3'", id="text-float"),
]


# The values an entry's options need besides the key under test (what a spec must write).
_REQUIRED_OPTIONS = {
    "pbt": {"hyperparam_mutations": {"alpha": [0.2, 0.4]}},
    "pb2": {"hyperparam_bounds": {"alpha": [0.1, 0.9]}},
}
# Every number and boolean key of the options of every searcher and scheduler table entry, and
# of every tracker: (YAML key path under the experiment, the entry's data without the key, type).
OPTION_KEYS = [
    pytest.param(
        f"{section}.{key}",
        {"type": name, **_REQUIRED_OPTIONS.get(name, {})},
        kind,
        id=f"{section}-{name}-{key}",
    )
    for section, table in (("search", methods.SEARCHERS), ("scheduler", methods.SCHEDULERS))
    for name, entry in table.items()
    for key, kind in _number_keys(entry.options, kinds=(int, float, bool)).items()
] + [
    pytest.param(key, None, kind, id=key)
    for key, kind in _number_keys(TrackersSpec, ("trackers",), (int, float, bool)).items()
]
NOT_BOOLEANS = [
    pytest.param(1, "got 1", id="one"),
    pytest.param("true", "'true'", id="text"),
    pytest.param("yes", "'yes'", id="yes"),
]
# Each option key with each value of another kind than its own.
OPTION_KEYS_AND_WRONG_VALUES = [
    pytest.param(*key.values, *bad.values, id=f"{key.id}-{bad.id}", marks=(*key.marks, *bad.marks))
    for key in OPTION_KEYS
    for bad in (NOT_BOOLEANS if key.values[2] is bool else NOT_NUMBERS)
]


def _with_option(key: str, base: dict[str, object] | None, value: object) -> dict[str, object]:
    """An experiment whose option `key` (`scheduler.max_t`) is `value`, its entry's `type` and
    required options beside it."""
    section, _, rest = key.partition(".")
    if base is None:  # a tracker's option: no type
        return {"run": "my_func", **_nested(key, value)}
    return {"run": "my_func", section: {**base, **_nested(rest, value)}}


def test_the_number_keys_are_found_from_the_models():
    """The walk below reaches the nested models, the mappings of numbers and both kinds."""
    for key, kind in [
        ("num_samples", int),
        ("resources_per_trial.cpu", float),
        ("checkpoint_config.num_to_keep", int),
        ("stop.k", float),
        ("expect.max_errored_trials", int),
        ("expect.k.min", float),
        ("expect.smoke.k.max", float),
        ("constraints.k.max", float),
        ("seeds", int),
        ("time_budget_s", float),
    ]:
        assert NUMBER_KEYS.get(key) is kind, key


@pytest.mark.parametrize("key", list(NUMBER_KEYS))
@pytest.mark.parametrize(("value", "shown"), NOT_NUMBERS)
def test_a_number_key_refuses_booleans_and_text(key, value, shown):
    """pydantic's lax mode read `num_samples: true` as 1 and `"4"` as 4 without a word: every
    number key of the spec takes only a number, named with its key path and the value."""
    data = {"e": {"run": "my_func", **_nested(key, value)}}
    with pytest.raises(SpecError) as err:
        spec.parse(data, Path("spec.yaml"))
    message = str(err.value)
    assert len(message.splitlines()) == 1 and err.value.path == f"e.{key}", message
    assert shown in message.lower(), message


def test_the_option_keys_are_found_from_the_method_tables_and_trackers():
    """The walk reaches every table entry's options and the trackers' nested options."""
    found = {
        (p.values[0], p.values[1]["type"] if p.values[1] else None): p.values[2]
        for p in OPTION_KEYS
    }
    for key, kind in [
        (("scheduler.max_t", "asha"), int),
        (("scheduler.max_t", "hyperband"), int),
        (("scheduler.reduction_factor", "asha"), float),
        (("scheduler.stop_last_trials", "asha"), bool),
        (("scheduler.quantile_fraction", "pb2"), float),
        (("scheduler.synch", "pbt"), bool),
        (("search.n_initial_points", "hyperopt"), int),
        (("search.random_fraction", "bohb"), float),
        (("trackers.mlflow.save_artifact", None), bool),
    ]:
        assert found.get(key) is kind, key


@pytest.mark.parametrize(("key", "base", "kind", "value", "shown"), OPTION_KEYS_AND_WRONG_VALUES)
def test_an_option_key_refuses_a_value_of_another_kind(key, base, kind, value, shown):
    """Searchers', schedulers' and trackers' options are as strict as the spec's own keys:
    `scheduler: {type: asha, max_t: true}` is one line naming the key path and the value."""
    with pytest.raises(SpecError) as err:
        spec.parse({"e": _with_option(key, base, value)}, Path("spec.yaml"))
    message = str(err.value)
    assert len(message.splitlines()) == 1 and err.value.path == f"e.{key}", message
    wanted = {int: "a whole number", float: "a number", bool: "true or false"}[kind]
    assert f"must be {wanted}, but got" in message and shown in message.lower(), message


@pytest.mark.parametrize(
    ("key", "base", "kind"), [p for p in OPTION_KEYS if p.values[2] is not bool]
)
@pytest.mark.parametrize("number", [0, 1, 2, 3, 100])
def test_an_option_key_takes_the_yaml_ints_it_took_before(key, base, kind, number):
    """Legitimate values keep working: a YAML int that pydantic's lax mode took for an option
    (an int for a float key too) is taken as the same value."""
    from tune_app.spec.models import ExperimentSpec

    data = _with_option(key, base, number)
    try:
        lax = ExperimentSpec.model_validate(data, strict=False)
    except ValueError:
        lax = None
    try:
        strict = _validated({"e": data})["e"]
    except SpecError:
        strict = None
    assert (lax is None) == (strict is None), (key, number)
    if strict is not None:
        value = strict.model_dump()
        for part in key.split("."):
            value = value[part]
        assert value == number and type(value) is kind


def test_pbt_factors_and_pb2_bounds_are_taken_as_yaml_lists(tmp_path):
    """Strict mode takes a tuple-typed key only as a tuple: the YAML list is turned into one."""
    path = tmp_path / "spec.yaml"
    path.write_text(
        "e:\n  run: my_func\n  scheduler: {type: pbt, perturbation_factors: [2, 0.5], "
        "hyperparam_mutations: {alpha: [0.2, 0.4]}}\n"
        "f:\n  run: my_func\n  scheduler: {type: pb2, hyperparam_bounds: {alpha: [0, 1]}}\n"
    )
    read = _validated(spec.read_yaml(path)[1])
    pbt = read["e"].scheduler
    assert pbt.perturbation_factors == (2.0, 0.5)
    assert pbt.options()["perturbation_factors"] == (2.0, 0.5)
    assert read["f"].scheduler.hyperparam_bounds == {"alpha": [0.0, 1.0]}


@pytest.mark.parametrize("key", [k for k, kind in NUMBER_KEYS.items() if kind is int])
def test_a_whole_number_key_refuses_a_fraction(key):
    data = {"e": {"run": "my_func", **_nested(key, 2.5)}}
    with pytest.raises(SpecError) as err:
        spec.parse(data, Path("spec.yaml"))
    assert err.value.path == f"e.{key}" and "2.5" in str(err.value)


@pytest.mark.parametrize("key", list(NUMBER_KEYS))
def test_a_number_key_takes_a_yaml_number(key, tmp_path):
    """Legitimate values keep working: a YAML int, for an int key and a float key alike."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"e": {"run": "my_func", **_nested(key, 2)}}))
    written = spec.read_yaml(path)[1]
    read = spec.parse(written, path).experiments[0]  # the whole spec resolves
    assert read.name == "e"
    value = _validated(written)["e"].model_dump()
    for part in key.split("."):
        value = value[part] if part in value else value["metrics"][part]
    assert value == 2 and type(value) is NUMBER_KEYS[key]


def _validated(data: object) -> dict[str, ExperimentSpec]:
    from tune_app.spec.messages import validate

    found: dict[str, ExperimentSpec] = validate(dict[str, ExperimentSpec], data)
    return found


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            "num_samples: true", "e.num_samples: must be a whole number, but got true", id="true"
        ),
        pytest.param(
            'num_samples: "4"',
            "e.num_samples: must be a whole number, but got the text '4'; write num_samples: 4, "
            "without quotes",
            id="text",
        ),
        pytest.param(
            "num_samples: 2.0",
            "must be a whole number, but got 2.0; write num_samples: 2",
            id="2.0",
        ),
        pytest.param(
            "resources_per_trial: {cpu: '0.5'}",
            "e.resources_per_trial.cpu: must be a number, but got the text '0.5'; write cpu: 0.5",
            id="float-text",
        ),
        pytest.param(
            "scheduler: {type: asha, max_t: true}",
            "e.scheduler.max_t: must be a whole number, but got true (a boolean)",
            id="option-true",
        ),
        pytest.param(
            "search: {type: hyperopt, gamma: '0.5'}",
            "e.search.gamma: must be a number, but got the text '0.5'; write gamma: 0.5, "
            "without quotes",
            id="option-text",
        ),
        pytest.param(
            "fail_fast: 'true'",
            "e.fail_fast: must be true or false, but got the text 'true'; write fail_fast: true",
            id="boolean-text",
        ),
    ],
)
def test_a_value_of_the_wrong_kind_says_what_to_write(cli, write_spec, tmp_path, line, expected):
    refused(cli("validate", write_spec(f"e:\n  run: my_func\n  {line}\n")), expected)
