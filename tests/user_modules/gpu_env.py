"""A trial that reports the CUDA_VISIBLE_DEVICES its process sees, and what a task it starts in
its own bundles (as RLlib starts env runners) sees: "unset" where the variable is not set."""

import os

import ray
from ray import tune


def _seen():
    return os.environ.get("CUDA_VISIBLE_DEVICES", "unset")


def train(config):
    inner = ray.get(ray.remote(num_cpus=1)(_seen).remote())
    tune.report({"score": 1.0, "trial_sees": _seen(), "task_sees": inner})
