"""Trials that report the CUDA_VISIBLE_DEVICES their process sees, and what a task each starts
in its own bundles (as RLlib starts env runners) sees: "unset" where the variable is not set.
Two names: Tune keeps one trainable per name for a run, with one experiment's resources."""

import os

import ray
from ray import tune


def _seen():
    return os.environ.get("CUDA_VISIBLE_DEVICES", "unset")


def train(config):
    inner = ray.get(ray.remote(num_cpus=1)(_seen).remote())
    tune.report({"score": 1.0, "trial_sees": _seen(), "task_sees": inner})


def train_on_gpu(config):
    train(config)
