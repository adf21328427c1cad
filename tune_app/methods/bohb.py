"""BOHB searching quantized ranges and choices by index (see `by_index`); its own module since
importing TuneBOHB imports hpbandster (0.9 s)."""

from __future__ import annotations

from ray.tune.search.bohb import TuneBOHB

from tune_app.methods.by_index import SearchesByIndex


class IndexedBOHB(SearchesByIndex, TuneBOHB):
    """TuneBOHB, which would drop q and return numpy scalars, searching by index."""

    index_quantized = True
