"""docs/reference/space.md: the search-space mappings, from tune_app.space's tables."""

from __future__ import annotations

from docs.gen.common import HEADER, table
from tune_app import space


def page() -> str:
    rows = [[f"`{kind}: [a, b, ...]`", "any", doc] for kind, doc in space.LIST_KINDS.items()]
    for kind, rule in space.RULES.items():
        written = f"`{kind}: [{', '.join(rule.params)}]`"
        rows.append([written, "integer" if rule.integer else "float", rule.doc])
    return (
        HEADER
        + "# Search-space mappings\n\n"
        + "A one-key mapping whose key is one of these is searched; anything else in `config` "
        "is a constant (nested mappings and lists are walked). These are Tune's own domains "
        "(`tune.uniform`, ...) with Tune's bounds, checked before anything runs.\n\n"
        + table(("mapping", "values", "samples"), rows)
    )
