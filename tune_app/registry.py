"""Trainable registry: names in a spec's `run:` to trainable functions and what they declare.

`run:` resolves, in order, to a trainable registered in `trainables/`, an RLlib algorithm
(`PPO`, `DQN`, ...), a trainable an installed package declares by name (entry-point group
`tune_app.trainables`), or a `package.module:name` let through `user_code`'s gate, each with its
kind (`tune_app.kinds`). Resolution never executes user code; `TrainableRef.load` does, on the
driver only.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tune_app.contract import TrainableInfo
from tune_app.errors import SpecError, did_you_mean
from tune_app.kinds import TrainableKind
from tune_app.kinds.builtin import FunctionKind, RegisteredKind
from tune_app.kinds.legacy_api import check_removed_tune_api
from tune_app.ray_internals import TESTED_RAY
from tune_app.user_code import TRAINABLE, check, entry_point, source_tree, user_path


@dataclass(frozen=True)
class TrainableRef:
    """A resolved `run:` value and its kind: a registered trainable, an RLlib algorithm or
    module:name. Callers ask `kind` what differs (`tune_app.kinds.TrainableKind`)."""

    run: str
    kind: TrainableKind

    def load(self) -> Any:
        """What Tune runs: a function (wrapped if it takes a legacy reporter) or a class."""
        return self.kind.load()


@cache
def registered() -> dict[str, TrainableInfo]:
    """Every trainable declared by a module of the `trainables` package, by name."""
    import trainables

    found: dict[str, TrainableInfo] = {}
    for mod in pkgutil.iter_modules(trainables.__path__):
        if mod.name.startswith("_"):
            continue
        info = getattr(importlib.import_module(f"trainables.{mod.name}"), "INFO", None)
        if isinstance(info, TrainableInfo):
            found[info.name] = info
    return dict(sorted(found.items()))


def resolve(run: str, spec_dir: Path | None = None) -> TrainableRef:
    """Resolve a spec's `run:` value without executing user code; SpecError if it names nothing."""
    from tune_app.rllib.tables import ALGORITHMS, REMOVED

    table = registered()
    if run in table:
        return TrainableRef(run=run, kind=RegisteredKind(table[run]))
    if run in ALGORITHMS:
        from tune_app.rllib.kind import RLlibKind

        return TrainableRef(run=run, kind=RLlibKind(run, user_path(spec_dir)))
    removed = {name.upper(): name for name in REMOVED}
    if run.upper() in removed:
        name = removed[run.upper()]
        raise SpecError(
            f"RLlib {TESTED_RAY} no longer has the {name} algorithm",
            path="run",
            allowed=list(ALGORITHMS),
            suggestion=f"its place is taken by {REMOVED[name]}",
        )
    search_path = user_path(spec_dir)
    declared = entry_point(TRAINABLE.group, run)
    if declared is not None:
        return TrainableRef(
            run=run, kind=FunctionKind(check(declared, TRAINABLE, search_path, "run"))
        )
    if ":" not in run:
        names = [*table, *ALGORITHMS]
        raise SpecError(
            f"'{run}' is not a registered trainable or an RLlib algorithm",
            path="run",
            allowed=names,
            suggestion=(did_you_mean(run, names) or "or write package.module:function"),
        )
    ref = check(run, TRAINABLE, search_path, "run")
    tree = source_tree(ref) if ref.local else None
    if tree is not None:
        check_removed_tune_api(tree, ref.module_name.replace(".", "/"), "run")
    return TrainableRef(run=run, kind=FunctionKind(ref))
