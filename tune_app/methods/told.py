"""A searcher told earlier trials as evaluated before a run's first trial (warm start), through
the calls a run makes: `suggest` hands out each point it was given to evaluate, and
`on_trial_complete` tells it that point's score. For searchers that take points but no scores
with them: Tune's HyperOptSearch has `points_to_evaluate` and neither `evaluated_rewards` nor
`add_evaluated_point` (Ray 2.55 to 2.60). The trials told are the searcher's alone: Tune never
sees them, so they are no trials of the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ray.tune.search import Searcher

from tune_app.ray_internals.wrapping import WrapsSearcher

# The ids the earlier trials are told under: never a Tune trial's (`<5 hex>_<5 digits>`).
TOLD_PREFIX = "warm_start_"


class Replayed(WrapsSearcher):
    """Around a searcher built with `points_to_evaluate`: once it has its space, each point is
    suggested and completed with its score from `told`, in order, as evaluated trials."""

    def __init__(self, searcher: Searcher, told: Sequence[float]) -> None:
        super().__init__(searcher)
        self.told = list(told)

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        accepted = bool(self.searcher.set_search_properties(metric, mode, config, **spec))
        if accepted:
            for i, score in enumerate(self.told):
                trial_id = f"{TOLD_PREFIX}{i:05d}"
                self.searcher.suggest(trial_id)  # its i-th point to evaluate
                self.searcher.on_trial_complete(trial_id, result={self.searcher.metric: score})
        return accepted


# The study's user attribute that records the earlier trials were added to it (how many).
TOLD_ATTR = "tune_app_warm_start_told"


class ToldOnce(WrapsSearcher):
    """Around Tune's OptunaSearch with its study in a storage: the earlier trials are added to
    the study once, as complete trials (OptunaSearch's `add_evaluated_point`), and the study
    records it. Tune sets a searcher up again when a run resumes (before it restores the
    searcher's saved state), and OptunaSearch, given `evaluated_rewards`, added them again each
    time: a resumed study held every earlier trial twice, and its sampler weighed them so."""

    def __init__(
        self,
        searcher: Searcher,
        points: Sequence[dict],
        told: Sequence[float],
        storage: Any,
        study_name: str,
    ) -> None:
        super().__init__(searcher)
        self.points, self.told = list(points), list(told)
        self.storage, self.study_name = storage, study_name

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        accepted = bool(self.searcher.set_search_properties(metric, mode, config, **spec))
        if accepted:
            import optuna

            study = optuna.load_study(study_name=self.study_name, storage=self.storage)
            if TOLD_ATTR not in study.user_attrs:
                for point, score in zip(self.points, self.told, strict=True):
                    self.searcher.add_evaluated_point(point, score)
                study.set_user_attr(TOLD_ATTR, len(self.told))
        return accepted
