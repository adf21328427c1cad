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
- `experiment`: an RLlib experiment of a spec;
- `snapshot`: `keys.json` written from the installed RLlib (`python -m tune_app.rllib`).

The names below, the ones `tune_app list` and the tests read, are re-exported here.
"""

from __future__ import annotations

from tune_app.rllib.config import algorithm_config, check_with_rllib
from tune_app.rllib.keys import algorithm_keys
from tune_app.rllib.resources import resources
from tune_app.rllib.snapshot import live_algorithm_keys
from tune_app.rllib.tables import ALGORITHMS, LEGACY_METRICS, METRIC, MODE, RENAMED, SHOWN_KNOBS
from tune_app.rllib.translation import Translated, is_legacy, renamed_to, translate_config

__all__ = [
    "ALGORITHMS",
    "LEGACY_METRICS",
    "METRIC",
    "MODE",
    "RENAMED",
    "SHOWN_KNOBS",
    "Translated",
    "algorithm_config",
    "algorithm_keys",
    "check_with_rllib",
    "is_legacy",
    "live_algorithm_keys",
    "renamed_to",
    "resources",
    "translate_config",
]
