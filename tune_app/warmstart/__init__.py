"""Warm start: a search that begins from earlier runs' finished trials (`warm_start: [RUN]`).

How a searcher takes them is its table entry's `warm` (`tune_app.methods.searchers`): Optuna and
HyperOpt are told them as evaluated (never run again), a grid skips the points they ran, random
search and BOHB run their configurations first. Ray-free:

- `earlier`: the earlier runs read and checked at `validate` (they exist, rank by this
  experiment's metric and mode, and their trials lie inside this space), and what is handed
  over (`WarmStart`), which the plan carries to the runner and run.json records.
"""
