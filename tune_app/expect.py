"""Expectations checked after a run (`expect:` in a spec), and the JUnit XML report for CI.

Every experiment has at least one expectation: at most `max_errored_trials` errored trials
(0 unless the spec says otherwise). Metric bounds are checked on the best trial's last result;
under --smoke only the bounds stated for it (`expect: {smoke: {metric: {min: ...}}}`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tune_app.plan.types import ExperimentPlan, Plan
from tune_app.rundir.files import for_the_user, write_text
from tune_app.rundir.records import RunSummary
from tune_app.scoring import finite
from tune_app.seeds import aggregate
from tune_app.words import counted


@dataclass(frozen=True)
class Outcome:
    """One expectation of one experiment, checked."""

    experiment: str
    name: str  # what was expected, e.g. "episode_return_mean >= 150"
    passed: bool
    message: str  # the actual value, and where it came from
    skipped: bool = False


def _causes(summary: RunSummary) -> str:
    if not summary.failed:
        return ""
    return " (" + ", ".join(f"{len(ids)} by {cause}" for cause, ids in summary.failed.items()) + ")"


def check(ep: ExperimentPlan, summary: RunSummary, smoke: bool = False) -> list[Outcome]:
    """Check an experiment's expectations against its summary."""
    expect = ep.experiment.expect
    errored = summary.errored
    outcomes = [
        Outcome(
            experiment=ep.name,
            name=f"errored trials <= {expect.max_errored_trials}",
            passed=errored <= expect.max_errored_trials,
            message=f"{errored} of {counted(len(summary.trials), 'trial')} errored"
            + _causes(summary),
        )
    ]
    best = summary.best
    configs = summary.configurations()
    by_id = {t.trial_id: t for t in summary.trials}
    for key, bound in expect.metrics.items():
        parts = [f"{key} >= {bound.min:g}"] if bound.min is not None else []
        parts += [f"{key} <= {bound.max:g}"] if bound.max is not None else []
        name = " and ".join(parts) + (" (smoke)" if expect.smoke_run else "")
        if smoke and not expect.smoke_run:  # a full run's bound; `expect: {smoke: ...}` gates
            outcomes.append(Outcome(ep.name, name, True, "not checked under --smoke", True))
            continue
        if configs:  # seeds: the best configuration, its key aggregated over its seeds
            values = [finite(by_id[i].values.get(key)) for i in configs[0].trial_ids]
            found = [v for v in values if v is not None]
            value = aggregate(found, summary.aggregate)
            where = f"best configuration ({summary.aggregate} of {counted(len(found), 'seed')})"
            if len(found) < len(summary.seeds):
                where += f", {len(summary.seeds) - len(found)} without a value"
        else:
            value = finite(best.values.get(key)) if best is not None else None
            where = f"best trial {best.trial_id}" if best else "no trial with a metric"
        if value is None:
            outcomes.append(Outcome(ep.name, name, False, f"{where} has no value of {key}"))
            continue
        ok = (bound.min is None or value >= bound.min) and (bound.max is None or value <= bound.max)
        outcomes.append(Outcome(ep.name, name, ok, f"{where}: {key} = {value:.6g}"))
    return outcomes


def junit_xml(plan: Plan, summaries: list[RunSummary], outcomes: list[Outcome]) -> str:
    """A JUnit XML report: one test case per trial and one per expectation, a suite each."""
    root = ET.Element("testsuites", name=f"tune_app {plan.spec.file.name}")
    for ep, summary in zip(plan.experiments, summaries, strict=True):
        mine = [o for o in outcomes if o.experiment == ep.name]
        suite = ET.SubElement(root, "testsuite", name=ep.name)
        failures = skipped = 0
        for trial in summary.trials:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{ep.name}.trials",
                name=f"trial {trial.trial_id}",
                time=f"{trial.time_total_s:.3f}",
            )
            ET.SubElement(case, "system-out").text = (
                f"config: {trial.config}\niterations: {trial.iterations}\n"
                f"{summary.metric}: {trial.score}"
            )
            if trial.error:
                failures += 1
                ET.SubElement(
                    case, "failure", message=trial.error, type=trial.cause or "TrialError"
                ).text = trial.error
        for outcome in mine:
            case = ET.SubElement(
                suite, "testcase", classname=f"{ep.name}.expect", name=outcome.name, time="0"
            )
            if outcome.skipped:
                skipped += 1
                ET.SubElement(case, "skipped", message=outcome.message)
            elif not outcome.passed:
                failures += 1
                ET.SubElement(case, "failure", message=outcome.message, type="Expectation")
        suite.set("tests", str(len(summary.trials) + len(mine)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        suite.set("time", f"{summary.wall_time_s:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(
    path: Path, plan: Plan, summaries: list[RunSummary], outcomes: list[Outcome]
) -> None:
    """Write the JUnit report atomically (a CI job never reads half a file); a write that fails
    raises WriteError (exit 74)."""
    with for_the_user():
        write_text(path, junit_xml(plan, summaries, outcomes))
