"""RLlib algorithms by name: config keys checked, legacy spellings carried to the new API stack,
bundles computed, results cleaned.

Keys are checked against a snapshot of each algorithm's config (`keys.json`, compared with the
installed RLlib by the tests), so `validate` never imports RLlib; `run` also has RLlib's own
`validate` check the config before Ray starts. One module per job, imports flowing down:

- `metrics`: what RLlib's results mean (no-data NaNs dropped, returns smoothed);
- `tables`: the legacy layer's data (algorithms, renamed and no-op keys, legacy metric names,
  the default metric, smoke sizes);
- `keys`: the snapshot of accepted keys, read without RLlib;
- `value_types`: the kind of value each key takes, as RLlib declares it, and the check of a
  spec's values (search-space values one by one) against it;
- `handlers`: the per-key handlers of legacy keys and the translation state they write to;
- `translation`: a legacy config and metric names carried to the new stack;
- `algorithm`: RLlib's Algorithm classes, imported lazily, and the subclass trials run;
- `config`: RLlib's own view of a config (`to_rllib`, its `validate`);
- `resources`: a trial's bundles as RLlib sizes them, and the refusal of one that cannot fit;
- `experiment`: an RLlib experiment of a spec, and the knobs `tune_app list` shows;
- `snapshot`: `keys.json` written from the installed RLlib (`python -m tune_app.rllib`).

The names below are re-exported for callers of the former single module.
"""

from __future__ import annotations

from tune_app.rllib.algorithm import algorithm_class, app_algorithm
from tune_app.rllib.config import algorithm_config, check_with_rllib, to_rllib
from tune_app.rllib.experiment import shown_knobs, translate_experiment
from tune_app.rllib.handlers import ObservationConnectors
from tune_app.rllib.keys import KEYS_FILE, AlgorithmKeys, algorithm_keys
from tune_app.rllib.resources import Resources, resources, trial_bundles
from tune_app.rllib.snapshot import live_algorithm_keys, write_keys_snapshot
from tune_app.rllib.tables import (
    ALGORITHMS,
    LEGACY_METRICS,
    METRIC,
    MODE,
    REMOVED,
    RENAMED,
    RESULT_GROUPS,
    SMOKE,
    SMOKE_AT_MOST,
    SMOKE_FRAGMENTS,
)
from tune_app.rllib.translation import (
    Translated,
    check_metric,
    check_mutated_key,
    is_legacy,
    renamed_to,
    translate_config,
    translate_metric,
)

__all__ = [
    "ALGORITHMS",
    "KEYS_FILE",
    "LEGACY_METRICS",
    "METRIC",
    "MODE",
    "REMOVED",
    "RENAMED",
    "RESULT_GROUPS",
    "SMOKE",
    "SMOKE_AT_MOST",
    "SMOKE_FRAGMENTS",
    "AlgorithmKeys",
    "ObservationConnectors",
    "Resources",
    "Translated",
    "algorithm_class",
    "algorithm_config",
    "algorithm_keys",
    "app_algorithm",
    "check_metric",
    "check_mutated_key",
    "check_with_rllib",
    "is_legacy",
    "live_algorithm_keys",
    "renamed_to",
    "resources",
    "shown_knobs",
    "to_rllib",
    "translate_config",
    "translate_experiment",
    "translate_metric",
    "trial_bundles",
    "write_keys_snapshot",
]
