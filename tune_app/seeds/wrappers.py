"""Which seeded variant runs an experiment with seeds, decided here and only here.

- Grid and random searches make every variant once per seed, in turn: `SeededVariants`.
- A model-based searcher is asked for a configuration once and told its seeds' aggregate:
  `SeedRepeater`, around the searcher the method table built.
- An early-stopping scheduler judges each configuration by its seeds' aggregate: the seeded
  class of `SEEDED_SCHEDULERS`; a scheduler judging nothing (FIFO) runs as it is; any other is
  refused with seeds at validate (`takes_seeds`).

The classes' behaviour is `tune_app.ray_internals.seeded` (it reaches into Tune's private
tables where Tune has no hook; that module's docstring names each), imported only when built, so
`validate` stays Ray-free.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

_SEEDED = "tune_app.ray_internals.seeded"

# Scheduler name -> the class that judges each configuration by its seeds' aggregate.
SEEDED_SCHEDULERS = {
    "hyperband": f"{_SEEDED}:SeededHyperBand",
    "asha": f"{_SEEDED}:SeededASHA",
    "median": f"{_SEEDED}:SeededMedian",
}


def takes_seeds(scheduler: str, judges: bool) -> bool:
    """Whether a configuration's seeds stay one configuration under `scheduler`: a seeded class
    judges by their aggregate, or the scheduler (`judges` False) judges nothing."""
    return scheduler in SEEDED_SCHEDULERS or not judges


def seeded_scheduler(scheduler: str, how: str, **options: Any) -> Any:
    """`scheduler`'s seeded class built with its options, judging by the aggregate `how`."""
    module, _, name = SEEDED_SCHEDULERS[scheduler].partition(":")
    return getattr(importlib.import_module(module), name)(how=how, **options)


def seeded_variants(seeds: Sequence[int], **options: Any) -> Any:
    """Tune's variant generator (with its `options`) making every variant once per seed."""
    from tune_app.ray_internals.seeded import SeededVariants

    return SeededVariants(seeds, **options)


def repeats(seeds: Sequence[int], makes_variants: bool) -> int:
    """How many seeds a searcher's configuration is repeated on by `SeedRepeater`: none for a
    searcher making variants itself (grid and random: `seeded_variants`), or without seeds."""
    return len(seeds) if seeds and not makes_variants else 0


def repeated(searcher: Any, seeds: Sequence[int], how: str) -> Any:
    """`searcher` asked once per configuration, run on every seed, told the aggregate `how`."""
    from tune_app.ray_internals.seeded import SeedRepeater

    return SeedRepeater(searcher, seeds, how)
