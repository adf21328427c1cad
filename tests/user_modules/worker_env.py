"""A trainable that reports what its worker process was given: a runtime env of its own or not,
and Tune's PL_DISABLE_FORK either way."""

import os

import ray
from ray import tune


def report_env(config):
    own = ray.get_runtime_context().runtime_env.get("env_vars") or {}
    tune.report(
        {
            "score": float(config["x"]),
            "own_env_vars": float(len(own)),
            "pl_disable_fork": float(os.environ.get("PL_DISABLE_FORK") == "1"),
        }
    )
