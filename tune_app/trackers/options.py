"""What `trackers:` may say: each tracker's options (Tune's and the tracker's own names) and the
mapping of trackers. Ray-free and import-free, so `validate` checks them instantly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Options(BaseModel):
    """A tracker's options: unknown keys are errors, values taken as written (strict, as the
    spec's own models: `save_artifact: "yes"` is not a boolean)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, strict=True, allow_inf_nan=False
    )


class MlflowOptions(_Options):
    """MLflow: one run per trial in one MLflow experiment per tune_app experiment."""

    tracking_uri: str | None = Field(
        None,
        description="MLflow's tracking URI: a server (http://127.0.0.1:5000) or "
        "sqlite:///mlflow.db (default: MLflow's, MLFLOW_TRACKING_URI or sqlite:///mlflow.db in "
        "the working folder); a folder or file: URI, MLflow's file store, only with "
        "MLFLOW_ALLOW_FILE_STORE=true",
    )
    experiment_name: str | None = Field(
        None, min_length=1, description="the MLflow experiment (default: the experiment's name)"
    )
    tags: dict[str, str] = Field(
        default_factory=dict, description="tags set on every run, beside the app's own"
    )
    save_artifact: bool = Field(
        False, description="Tune's: each trial's folder as artifacts of its run when it ends"
    )


class WandbOptions(_Options):
    """Weights & Biases: one run per trial, grouped by tune_app experiment."""

    project: str | None = Field(
        None, min_length=1, description="the W&B project (default: the experiment's name)"
    )
    entity: str | None = Field(None, description="the W&B team or user (default: yours)")
    group: str | None = Field(
        None, min_length=1, description="the W&B group (default: the experiment's name)"
    )
    mode: Literal["online", "offline"] = Field(
        "online",
        description="online (needs an API key: WANDB_API_KEY or `wandb login`) or offline "
        "(runs kept in `dir`, sent later with `wandb sync`)",
    )
    tags: list[str] = Field(default_factory=list, description="tags of every run")
    dir: str | None = Field(
        None, description="where W&B keeps its run folders (default: W&B's, ./wandb)"
    )


class TrackersSpec(_Options):
    """`trackers:` in a file or an experiment: the trackers every trial is logged to. An
    experiment's entry replaces the file's entry of the same tracker (null turns it off)."""

    mlflow: MlflowOptions | None = Field(None, description="log every trial to MLflow")
    wandb: WandbOptions | None = Field(None, description="log every trial to Weights & Biases")


@dataclass(frozen=True)
class Chosen:
    """A tracker an experiment logs to: its name, options, and where the spec set it."""

    name: str
    options: Any  # the entry's options model
    key_path: str  # `trackers.mlflow` or `experiments.x.trackers.mlflow`, for messages
