"""docs/reference/methods.md: every searcher and scheduler, its options and defaults, from the
tables of tune_app.methods."""

from __future__ import annotations

from docs.gen.common import HEADER, code, field_rows, first_paragraph, table
from tune_app.methods import SCHEDULERS, SEARCHERS, Scheduler, Searcher

HEAD = ("option", "type", "default", "meaning")


def _options(model: type) -> str:
    rows = field_rows(model, skip=("type",))
    return table(HEAD, rows) if rows else "No options.\n"


def _searcher_traits(s: Searcher) -> list[str]:
    traits = []
    if s.needs_metric:
        traits.append("needs a `metric`")
    if not s.takes_grid:
        traits.append("no `grid_search` axes (use `choice`)")
    if s.needs_sampled:
        traits.append("at least one sampled value")
    if not s.exact_trials:
        traits.append("may end before `num_samples` trials")
    if s.pairs_with:
        traits.append(f"pairs with `scheduler: {s.pairs_with}`, chosen when none is named")
    return traits


def _scheduler_traits(s: Scheduler) -> list[str]:
    traits = ["needs a `metric`"] if s.needs_metric else []
    if s.population:
        traits.append("a trainable that checkpoints; `search: grid` or `random` only")
    if s.pauses:
        traits.append("pauses trials and resumes them from checkpoints")
    if s.synchronous:
        traits.append("no `max_concurrent_trials` below the trial count")
    if not s.takes_seeds:
        traits.append("not with `seeds`")
    if s.resume_note:
        traits.append(f"on resume: {s.resume_note}")
    return traits


def _entry(kind: str, name: str, model: type, traits: list[str], extra: str = "") -> str:
    text = f"### {name}\n\n`{kind}: {name}`"
    text += f" or `{kind}: {{type: {name}, ...}}`" if len(model.model_fields) > 1 else ""
    text += f". {first_paragraph(model.__doc__)}{extra}\n\n"
    if traits:
        text += "".join(f"- {t}\n" for t in traits) + "\n"
    return text + _options(model) + "\n"


def page() -> str:
    parts = [
        HEADER,
        "# Searchers and schedulers\n\n",
        "`search:` and `scheduler:` take a name, or a mapping with `type:` and the options "
        "below. An option an entry does not take is an error (Tune's own `create_scheduler` "
        "would drop it silently).\n\n",
        "## Searchers\n\n",
    ]
    for s in SEARCHERS.values():
        parts.append(_entry("search", s.name, s.options, _searcher_traits(s)))
    parts.append("## Schedulers\n\n")
    for sch in SCHEDULERS.values():
        tune_class = code(sch.variants.plain.rpartition(":")[2])
        extra = f" Runs as {tune_class}."
        parts.append(_entry("scheduler", sch.name, sch.options, _scheduler_traits(sch), extra))
    return "".join(parts).rstrip("\n") + "\n"
