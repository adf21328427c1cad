"""The run folder, Ray-free: where everything a run leaves lives, how it is written and read.

- `location`: `RunLocation`, where an experiment's folder is (local or cloud), the folder that
  holds it, its files, whether it holds a run and whether that run can be resumed, mirroring;
- `layout`: the file names of a run folder, Tune's saved state read without Ray;
- `files`: how the app reads and writes a file: atomic writes and whole appended lines, never
  through a link, never reading a pipe or a device;
- `write`: the run manifest (`run.json`), the spec as run, the journal of ended trials;
- `records`: the types written and read back, each typed as it is read: `RunRecord`
  (run.json), `TrialOutcome`, `RunSummary` (summary.json), `CloneEvent`, `TrialEnd` (the
  journal);
- `outcome`: what an experiment ended with, computed from Tune's results;
- `pareto`: the Pareto front of a search of several objectives, and the point `best --pick`
  names (pure functions);
- `read`: a run read back from its files alone (`analyze`, `report`, `resume`);
- `storage`: cloud URIs: staging, pulling and mirroring;
- `noise`, `budget`, `rungs`: statistics of a run read back, pure functions on its records:
  each configuration's chance of being best and its bound over seeds (`select: lcb`), the
  expected best against the number of trials, and whether early stopping's rungs predicted
  the final scores.

Nothing outside this package builds a path inside a run folder or knows a URI scheme (a test
reads every module to keep it so); the Ray callbacks that append rows and journal lines during a
run (`tune_app.callbacks`) write through `RunLocation`.
"""
