"""The report's importance table: each parameter's share by every method, as the page shows
it, with how they were learnt and their notes."""

from __future__ import annotations

from dataclasses import dataclass

from tune_app import scoring
from tune_app.readback.importance.optuna_evaluators import EVALUATORS
from tune_app.readback.importance.run import RunImportance
from tune_app.rundir.read import ExperimentResults


@dataclass(frozen=True)
class ImportanceRow:
    """One parameter's line of the importance table."""

    param: str
    share: str  # its share of the permutation importance, as a percentage ("-": none)
    bar: int  # the bar's width, in percent of the most important parameter's
    others: tuple[str, ...] = ()  # its share by each of `ParamImportance.methods`


@dataclass(frozen=True)
class ParamImportance:
    """Which parameters matter: the table (most important first), how it was computed, and a
    note (why there is no table, or a caveat)."""

    rows: tuple[ImportanceRow, ...]
    basis: str
    note: str
    doubtful: bool = False  # the parameters do not predict the score: the note is a warning
    methods: tuple[str, ...] = ()  # Optuna's evaluators, a column each after the bar
    notes: tuple[str, ...] = ()  # their notes that the first note does not already say


def table(exp: ExperimentResults, every: RunImportance | None) -> ParamImportance | None:
    """The report's table of `every` (None: no importances), with how it was learnt."""
    if every is None:
        return None
    found = every.permutation
    top = max((i.share for i in found.params), default=0.0)
    rows = []
    for param in every.params:
        share, *others = every.shares(param).values()
        rows.append(
            ImportanceRow(
                param=param,
                share="-" if share is None else f"{share:.0%}",
                bar=round(100 * share / top) if share and top else 0,
                others=tuple("-" if v is None else f"{v:.0%}" for v in others),
            )
        )
    basis = ""
    if found.params:
        basis = (
            f"Randomized trees learnt {exp.metric} ({scoring.describe(exp.scope)}) from the "
            f"searched parameters of {found.trials} scored trials (cross-validated R² = "
            f"{found.fit:.2f}); a parameter's importance is how much their fit drops when "
            "its values are shuffled among the trials, shown as its share of the total. With few "
            "trials, a parameter that does not matter can still take a share by chance."
        )
    if any(e.shares for e in every.evaluated):
        basis += (
            " Beside it, Optuna's evaluators: fANOVA, each parameter's share of the variance a "
            "random forest's fit explains on its own; PED-ANOVA, how differently a parameter is "
            "spread in the best trials than in all."
        )
    doubtful = found.fit is not None and found.fit <= 0
    notes = tuple(dict.fromkeys(e.note for e in every.evaluated if e.note and e.note != found.note))
    return ParamImportance(
        rows=tuple(rows),
        basis=basis.strip(),
        note=found.note,
        doubtful=doubtful,
        methods=tuple(e.label for e in EVALUATORS),
        notes=notes,
    )
