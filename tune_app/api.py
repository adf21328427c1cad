"""The Python API: `tune_app.run(spec)` runs a spec as `tune_app run` does and returns what it
ended with; `tune_app.load(folder)` reads a run back as `tune_app analyze` does, as a DataFrame.

Bad input raises the CLI's errors (`SpecError`, `SpecErrors`: `TuneAppError`s) before Ray
starts; a failed trial is not an exception but shows in the result (`passed`, `exit_code`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app.errors import SpecError

if TYPE_CHECKING:
    import pandas as pd

    from tune_app.expect import Outcome
    from tune_app.plan import Plan
    from tune_app.rundir.read import ExperimentResults
    from tune_app.rundir.records import RunSummary, TrialOutcome

SpecSource = str | os.PathLike[str] | Mapping[str, Any]
DICT_SPEC = "<dict>"  # the file name a spec given as a mapping goes by (run.json, messages)


@dataclass(frozen=True)
class RunResult:
    """What `run` ended with: each experiment's summary, where its results are, expectations."""

    plan: Plan
    summaries: list[RunSummary]  # one per experiment, in the spec's order
    outcomes: list[Outcome]  # every expectation checked

    @property
    def experiments(self) -> dict[str, RunSummary]:
        return {s.experiment: s for s in self.summaries}

    @property
    def folders(self) -> dict[str, str]:
        """Experiment -> where its results are (a folder, or a cloud URI)."""
        return {ep.name: ep.location for ep in self.plan.experiments}

    @property
    def summary_paths(self) -> dict[str, str]:
        """Experiment -> its summary.json."""
        return {ep.name: ep.folder.summary_where for ep in self.plan.experiments}

    @property
    def best(self) -> dict[str, TrialOutcome | None]:
        """Experiment -> its best trial (by the experiment's metric, mode and scope)."""
        return {s.experiment: s.best for s in self.summaries}

    @property
    def interrupted(self) -> bool:
        return any(s.interrupted for s in self.summaries)

    @property
    def passed(self) -> bool:
        """Every expectation held (at most `max_errored_trials` errors, metric bounds)."""
        return not self.interrupted and all(o.passed for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        """What `tune_app run` would exit with: 0 passed, 1 failed, 130 interrupted."""
        return 130 if self.interrupted else 0 if self.passed else 1

    def frame(self) -> pd.DataFrame:
        """The run's trials as `load` reads them back from the results."""
        return load(*self.folders.values())


def validate(
    spec: SpecSource,
    *,
    smoke: bool = False,
    storage_path: str | os.PathLike[str] | None = None,
    rllib_checks: bool = False,
    cpus: float | None = None,
) -> Plan:
    """The checked plan of a spec (a file, or a mapping as the YAML would hold it), Ray-free:
    what `tune_app validate` prints. (`tune_app.plan` is the module that makes it.)"""
    from tune_app.plan import make_plan
    from tune_app.spec import resolve as specs

    loaded = _load(spec, specs)
    return make_plan(
        loaded,
        cpus=cpus,
        storage_path=None if storage_path is None else str(storage_path),
        smoke=smoke,
        rllib_checks=rllib_checks,
    )


def run(
    spec: SpecSource,
    *,
    smoke: bool = False,
    storage_path: str | os.PathLike[str] | None = None,
    address: str | None = None,
    verbosity: int = 0,
) -> RunResult:
    """Run every experiment of `spec` as `tune_app run` does (Ray started or joined) and return
    its summaries and expectations. `verbosity`: 0 quiet, 1 the live view, 2 Tune's tables."""
    from tune_app import expect, runner
    from tune_app.rundir.outcome import missing_keys_error

    cluster = address or os.environ.get("RAY_ADDRESS")
    checked = validate(
        spec,
        smoke=smoke,
        storage_path=storage_path,
        rllib_checks=True,
        cpus=float("inf") if cluster else None,
    )
    opts = runner.RunOptions(address=address, verbosity=verbosity, command=("<python api>",))
    summaries = runner.run(checked, opts)
    for ep, summary in zip(checked.experiments, summaries, strict=True):
        if summary.missing and not summary.interrupted:
            raise missing_keys_error(ep, summary).with_file(str(checked.spec.file))
    outcomes = [
        o
        for ep, summary in zip(checked.experiments, summaries, strict=True)
        for o in expect.check(ep, summary, smoke=checked.smoke)
    ]
    return RunResult(plan=checked, summaries=summaries, outcomes=outcomes)


def read(*folders: str | os.PathLike[str]) -> list[ExperimentResults]:
    """Every experiment in `folders` (experiment folders, storage folders or cloud URIs), read
    from their files alone, as `analyze` reads them."""
    from tune_app.rundir.read import load as load_runs

    return [exp for folder in folders for exp in load_runs(os.fspath(folder))]


def load(*folders: str | os.PathLike[str], top: int | None = None) -> pd.DataFrame:
    """A run's trials as a DataFrame, a row each, ranked best first within each experiment as
    `analyze` ranks them: experiment, trial_id, status, `config/<path>` of each searched
    parameter, iterations, score, best, last, time_total_s, failures, stopped_early, cause,
    error, folder."""
    import pandas as pd

    from tune_app.analyze import trial_rows

    return pd.DataFrame(trial_rows(read(*folders), top))


def _load(source: SpecSource, specs: Any) -> Any:
    if isinstance(source, Mapping):
        import yaml

        data = dict(source)
        try:
            text = yaml.safe_dump(data, sort_keys=False)
        except yaml.YAMLError as err:
            raise SpecError(
                f"the spec holds a value that is not plain data: {err}", file=DICT_SPEC
            ) from None
        # The same path as a file: errors name the mapping, the run keeps its text as spec.yaml.
        return specs.loads(text, Path(DICT_SPEC))
    return specs.load(source)
