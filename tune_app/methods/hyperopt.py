"""HyperOpt searching choices by index (see `by_index`)."""

from __future__ import annotations

from ray.tune.search.hyperopt import HyperOptSearch

from tune_app.methods.by_index import SearchesByIndex


class IndexedHyperOpt(SearchesByIndex, HyperOptSearch):
    """HyperOptSearch, which would return lists (a choice's and constants) as tuples, searching
    choices by index. Quantized ranges it rounds as written (`Domain.tune_form`)."""
