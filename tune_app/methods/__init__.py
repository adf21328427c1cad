"""The searchers and schedulers a spec can name, as two tables.

Each entry holds its options model (what `search:` / `scheduler:` may say), what it needs from
the experiment (a metric, no grid axes, at least one sampled value) and how it builds the Tune
object. The spec's unions and name lists come from these tables, so adding a searcher or a
scheduler is one entry plus its test. Ray is imported only when a Tune object is built, so
`validate` stays Ray-free.

- `common`: `Options` (what every entry's options model is) and `Context` (what building needs);
- `searchers`: the searcher table and its options;
- `by_index`: a wrapper handing choices (and for BOHB quantized ranges) to Tune's model-based
  searchers by index, so that trials get the values as written;
- `schedulers`: the scheduler table, its options, traits and variants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tune_app.methods.common import Context, Options
from tune_app.methods.schedulers import (
    SCHEDULERS,
    AshaOptions,
    FifoOptions,
    HyperBandOptions,
    MedianOptions,
    Pb2Options,
    PbtOptions,
    Scheduler,
    Variants,
    mutated_paths,
)
from tune_app.methods.searchers import (
    BRACKET_SEARCHERS,
    SEARCHERS,
    BohbOptions,
    GridOptions,
    HyperOptOptions,
    OptunaOptions,
    RandomOptions,
    Searcher,
)

__all__ = [
    "BRACKET_SEARCHERS",
    "SCHEDULERS",
    "SEARCHERS",
    "AshaOptions",
    "BohbOptions",
    "Context",
    "FifoOptions",
    "GridOptions",
    "HyperBandOptions",
    "HyperOptOptions",
    "MedianOptions",
    "OptunaOptions",
    "Options",
    "Pb2Options",
    "PbtOptions",
    "RandomOptions",
    "Scheduler",
    "Searcher",
    "Variants",
    "mutated_paths",
    "names_where",
    "scheduler_of",
    "searcher_of",
]


def names_where(table: dict[str, Any], trait: Callable[[Any], bool]) -> list[str]:
    """The names of a table's entries that have a trait, for messages that list what is allowed."""
    return [name for name, entry in table.items() if trait(entry)]


def searcher_of(options: Options) -> Searcher:
    """The table entry of a spec's parsed `search:`."""
    return SEARCHERS[options.type]


def scheduler_of(options: Options) -> Scheduler:
    """The table entry of a spec's parsed `scheduler:`."""
    return SCHEDULERS[options.type]
