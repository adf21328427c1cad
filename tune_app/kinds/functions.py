"""A user's function as Tune runs it: with the reporter of Tune's original function API, and with
keyword reports as Ray 1.x to 2.6 documented them. Ray is imported only inside a trial."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


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
        out = fn(config)
        if not inspect.isgenerator(out):
            return out
        from ray import tune

        # Tune's generator API (`yield {"score": x}`, each a result): Tune iterates a generator
        # function it is given, but this wrapper and the app's around it are plain functions,
        # so the wrapper reports each as Tune would.
        for result in out:
            if isinstance(result, dict):
                tune.report(result)
            elif result:
                raise ValueError(
                    f"{fn.__name__} yielded {type(result).__name__}: a generator trainable "
                    "yields a dict of metrics each step"
                )
        return None

    return _named_as(trainable, fn)


def accept_keyword_reports() -> None:
    """Make this process's `ray.tune.report` take metrics as keywords too (once; a trial's own
    process, where nothing else reports). A patch: the trainable calls Ray's function by name,
    and Tune has no hook between the two. Rebinding the trainable's own names instead (`tune`,
    `ray`, `report` in a copy of its globals, or in its module) reaches fewer calls: a copy
    takes its `global` writes away from its module and leaves its module's helpers on Ray's
    report; either misses `from ray import tune` inside the function, a closure's `tune` and
    a helper in another module, all of which this reaches."""
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
