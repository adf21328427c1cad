"""Tune's usage tag of a run's callbacks: taken as Ray takes it where the integrations it names
are imported already, and left out where taking it would import mlflow and wandb."""

from __future__ import annotations

import importlib
import sys

from ray.air._internal import usage
from ray.tune import Callback

from tune_app.ray_internals.telemetry import INTEGRATIONS, callbacks_tagged_if_imported


class _Mine(Callback):
    pass


def _recorded(monkeypatch) -> list[tuple[object, str]]:
    tags: list[tuple[object, str]] = []
    monkeypatch.setattr(
        usage, "record_extra_usage_tag", lambda key, value: tags.append((key, value))
    )
    return tags


def test_with_an_integration_not_imported_nothing_is_imported_or_tagged(monkeypatch):
    tags = _recorded(monkeypatch)
    missing = INTEGRATIONS[0]
    monkeypatch.delitem(sys.modules, missing, raising=False)
    with callbacks_tagged_if_imported():
        assert usage.tag_callbacks([_Mine()]) is False
    assert missing not in sys.modules
    assert tags == []


def test_with_every_integration_imported_ray_tags_as_before(monkeypatch):
    for name in INTEGRATIONS:
        importlib.import_module(name)
    tags = _recorded(monkeypatch)
    with callbacks_tagged_if_imported():
        usage.tag_callbacks([_Mine(), _Mine()])
    [(_, value)] = tags
    assert '"CustomCallback": 2' in value


def test_ray_s_own_tag_comes_back_after(monkeypatch):
    original = usage.tag_callbacks
    with callbacks_tagged_if_imported():
        assert usage.tag_callbacks is not original
    assert usage.tag_callbacks is original
