"""A model-based searcher run on seeds: each configuration it suggests runs once per seed, and
it is told the configuration's aggregate score, never a single seed's (see `seeds`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.tune.search import Repeater
from ray.tune.search.repeater import TRIAL_INDEX

from tune_app.seeds import SEED_KEY, aggregate


class SeedRepeater(Repeater):
    """Tune's Repeater with the seed in `config["seed"]` and the spec's aggregate (mean, iqm or
    median) instead of Repeater's fixed mean."""

    def __init__(self, searcher: Any, seeds: Sequence[int], how: str) -> None:
        super().__init__(searcher, repeat=len(seeds), set_index=True)
        self.seeds = list(seeds)
        self.how = how

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        config = super().suggest(trial_id)
        if isinstance(config, dict) and TRIAL_INDEX in config:
            config[SEED_KEY] = self.seeds[config.pop(TRIAL_INDEX)]
        return config

    # Repeater's own signature (**kwargs) differs from Searcher's (`error`); Tune calls both ways.
    def on_trial_complete(  # type: ignore[override]
        self, trial_id: str, result: dict[Any, Any] | None = None, **kwargs: Any
    ) -> Any:
        group = self._trial_id_to_group.get(trial_id)
        if group is None:
            return
        metric = self.searcher.metric
        value = (result or {}).get(metric)
        group.report(trial_id, value if value is not None else np.nan)
        if group.finished_reporting():
            told = aggregate(list(group.scores()), self.how)
            self.searcher.on_trial_complete(
                group.primary_trial_id,
                result={metric: told if told is not None else np.nan},
                **kwargs,
            )
