"""Runs read back and shown: `analyze` (tables, JSON, CSV), `best` (the best configurations as a
spec, and `evaluate`'s), `report` (the HTML page, its figures in `plots`), `front` (several
objectives' Pareto front), `importance` (which parameters matter), `compare_runs`,
`comparing` and `compare_page` (runs side by side, `compare`: judged, found and printed,
drawn), `loading` (the Python API's readers: `read`, `load`, `compare`, `best_checkpoint`).
Each reads a run folder through `tune_app.rundir` and imports no Ray."""
