"""Trainable registry: names in a spec's `run:` to trainable functions and what they declare.

`run:` resolves, in order, to a trainable registered in `trainables/`, an RLlib algorithm
(`PPO`, `DQN`, ...), or a `package.module:function` found in the spec's folder, the working
directory or an installed package. Resolution never executes user code; `TrainableRef.load`
does, on the driver only.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from tune_app.contract import TrainableInfo
from tune_app.errors import SpecError, did_you_mean
from tune_app.user_code import (
    check_source,
    check_trainable,
    find_module,
    import_user_module,
    missing_name,
    user_path,
)


@dataclass(frozen=True)
class TrainableRef:
    """A resolved `run:` value: a registered trainable, an RLlib algorithm or module:function."""

    run: str
    kind: Literal["registered", "rllib", "function"]
    info: TrainableInfo | None = None
    search_path: tuple[str, ...] = ()  # folders user modules are imported from

    def load(self) -> Any:
        """What Tune runs: a function (wrapped if it takes a legacy reporter) or an Algorithm."""
        if self.kind == "rllib":
            from tune_app.rllib.algorithm import app_algorithm

            return app_algorithm(self.run)
        if self.info is not None:
            return as_tune_function(self.info.fn)
        module_name, func_name = self.run.split(":")
        module = import_user_module(module_name, self.search_path, "run")
        fn = getattr(module, func_name, None)
        if fn is None:
            missing_name(module, module_name, func_name, "run", classes=False)
        check_trainable(fn, func_name, "run")
        if inspect.isclass(fn):
            return fn  # a tune.Trainable class
        return with_keyword_reports(as_tune_function(fn))


def as_tune_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` as a Tune function trainable; `def f(config, reporter)` gets a reporter that reports.

    The original Tune function API passed `reporter(**metrics)`; Ray 2.x calls `f(config)` only.
    """
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(params) < 2:
        return fn

    def with_reporter(config: dict[str, Any]) -> None:
        from ray import tune

        def reporter(_metrics: dict[str, Any] | None = None, **metrics: Any) -> None:
            tune.report({**(_metrics or {}), **metrics})

        fn(config, reporter)

    return _named_as(with_reporter, fn)


def _named_as(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """`wrapper` with `fn`'s name and doc (Tune names trials after it). Not functools.wraps:
    Tune reads the signature, which must stay the wrapper's `(config)`."""
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def with_keyword_reports(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run where `tune.report` also takes keywords, as Ray 1.x to 2.6 documented it
    (`tune.report(mean_loss=x)`); Ray 2.7 and later take a dict only, and such a trainable
    failed every trial with a TypeError."""

    def trainable(config: dict[str, Any]) -> Any:
        accept_keyword_reports()
        return fn(config)

    return _named_as(trainable, fn)


def accept_keyword_reports() -> None:
    """Make this process's `ray.tune.report` take metrics as keywords too (once; a trial's own
    process, where nothing else reports)."""
    from ray import tune

    original = tune.report
    if getattr(original, "takes_keywords", False):
        return

    def report(
        metrics: dict[str, Any] | None = None, /, *, checkpoint: Any = None, **values: Any
    ) -> None:
        original({**(metrics or {}), **values}, checkpoint=checkpoint)

    report.takes_keywords = True  # type: ignore[attr-defined]
    report.__doc__ = original.__doc__
    tune.report = report


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
        return TrainableRef(run=run, kind="registered", info=table[run])
    if run in ALGORITHMS:
        return TrainableRef(run=run, kind="rllib")
    removed = {name.upper(): name for name in REMOVED}
    if run.upper() in removed:
        name = removed[run.upper()]
        raise SpecError(
            f"RLlib 2.60 no longer has the {name} algorithm",
            path="run",
            allowed=list(ALGORITHMS),
            suggestion=f"its place is taken by {REMOVED[name]}",
        )
    if ":" not in run:
        names = [*table, *ALGORITHMS]
        raise SpecError(
            f"'{run}' is not a registered trainable or an RLlib algorithm",
            path="run",
            allowed=names,
            suggestion=(did_you_mean(run, names) or "or write package.module:function"),
        )
    module_name, func_name = run.split(":")
    search_path = user_path(spec_dir)
    check_source(find_module(module_name, search_path, "run"), func_name, "run")
    return TrainableRef(run=run, kind="function", search_path=search_path)
