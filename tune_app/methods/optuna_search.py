"""Optuna searching choices by index and values inside lists (see `by_index`)."""

from __future__ import annotations

from ray.tune.search.optuna import OptunaSearch

from tune_app.methods.by_index import SearchesByIndex


class IndexedOptuna(SearchesByIndex, OptunaSearch):
    """Tune's OptunaSearch, which names a value by its path joined with "/" and so failed on a
    domain inside a list, and takes as choices only None, bool, int, float and str: each choice
    is searched as the index of its value."""
