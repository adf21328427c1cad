"""Spec loading and validation: a YAML file, in either form, to typed experiments.

The classic form (every top-level key an experiment, as in Tune's `run_experiments` and RLlib's
tuned examples) and the app form (file-level settings plus `experiments:`) both end as a `Spec`
of fully resolved `Experiment`s. No Ray import here, so `validate` and `--help` stay instant.

- `models`: the models of a file as written;
- `resolved`: the resolved `Experiment` and `Spec`, what the plan and the run are given;
- `loading`: safe, bounded YAML reading (`read_yaml`, `read_yaml_text`);
- `resolve`: the entry points `load`, `loads` and `parse`, and the resolution of experiments;
- `legacy`: Tune's old keys and the aliases, translated with a warning;
- `messages`: pydantic's errors as SpecErrors;
- `schema`: the JSON Schema of a spec file (`json_schema`).
"""

from tune_app.spec.loading import read_yaml, read_yaml_text
from tune_app.spec.models import SCHEDULER_NAMES, SEARCHES, CheckpointSpec, ResourcesSpec
from tune_app.spec.resolve import load, loads, parse
from tune_app.spec.resolved import Spec
from tune_app.spec.schema import json_schema

__all__ = [
    "SCHEDULER_NAMES",
    "SEARCHES",
    "CheckpointSpec",
    "ResourcesSpec",
    "Spec",
    "json_schema",
    "load",
    "loads",
    "parse",
    "read_yaml",
    "read_yaml_text",
]
