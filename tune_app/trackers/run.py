"""What a run does with its trackers: their Tune callbacks, built in the tuner, and what they
record once summary.json is written (`tune_app.trackers` holds the table these read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tune_app.trackers import TRACKERS

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan
    from tune_app.rundir.records import RunSummary


def callbacks_for(ep: ExperimentPlan) -> list[Any]:
    """The Tune callbacks of `ep`'s trackers (each tracker's package imported in its worker)."""
    from tune_app.trackers.callback import TrackerLog

    return [TrackerLog(TRACKERS[t.name].sink, t.options, ep) for t in ep.experiment.trackers]


def finish(ep: ExperimentPlan, summary: RunSummary) -> None:
    """What the trackers record once summary.json is written (final statuses, the summary),
    queued behind the trials' results; then each tracker's worker ends, waited for a bounded
    time (`mirror.DRAIN_S`)."""
    from tune_app.trackers.mirror import LIVE

    for one in ep.experiment.trackers:
        sink = TRACKERS[one.name].sink
        live = LIVE.pop((sink, ep.name), None)
        if live is None:  # no trial ran in this process: the summary alone
            from tune_app.trackers.mirror import mirror_for, target_of

            live = mirror_for(sink, one.options, target_of(ep))
        live.finish(summary)
        live.stop()


def stop(ep: ExperimentPlan) -> None:
    """End `ep`'s trackers' workers in this process without a summary (a run that raised before
    it had one), waited for a bounded time as `finish` does: a worker left running kept its
    thread and its tracker's run open for the rest of the process."""
    from tune_app.trackers.mirror import LIVE

    for one in ep.experiment.trackers:
        live = LIVE.pop((TRACKERS[one.name].sink, ep.name), None)
        if live is not None:
            live.stop()
