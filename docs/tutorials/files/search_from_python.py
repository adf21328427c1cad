"""Run a search from Python, then read its results back as a table."""

import tune_app

# The checked plan, without Ray: what `tune_app validate` prints.
plan = tune_app.validate("search_spaces/grid.yaml")
print([experiment.name for experiment in plan.experiments])

# The same search as `tune_app run`; a spec may also be a dict, as the YAML would hold it.
result = tune_app.run(
    {
        "metric": "mean_accuracy",
        "mode": "max",
        "experiments": {
            "from_python": {
                "run": "my_func",
                "stop": {"training_iteration": 20},
                "config": {"alpha": {"grid_search": [0.2, 0.6]}, "beta": 1},
            }
        },
    }
)
print("exit code", result.exit_code)  # 0, 1 or 130, as `tune_app run` exits
best = result.best["from_python"]  # a TrialOutcome: trial_id, score, params, config, ...
print("best", best.trial_id, best.params, best.score)

# Any run folder, finished or interrupted, as a pandas DataFrame: a row per trial, best first.
frame = tune_app.load("results/from_python")
print(frame[["trial_id", "status", "config/alpha", "score"]].to_string(index=False))
assert frame["config/alpha"].iloc[0] == 0.6
