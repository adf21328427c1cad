"""Optional packages: whether one is installed (found without importing it), and the refusal of a
spec that needs a missing one, with the `pip install` line of the tune_app extra that installs it,
or a broken one (its import raises: a half-finished install, a wheel for another Python), named
with its error and the line that reinstalls it.

The searcher, scheduler and tracker tables name, per entry, the packages it imports and its
extra (pyproject.toml's `[project.optional-dependencies]`); the plan checks them before Ray
starts. The line leaves out `-c constraints.txt`, whose Ray pin a user beside another Ray
cannot take.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tune_app.errors import SpecError, import_failure

if TYPE_CHECKING:
    from tune_app.methods import Options


# Every optional package a spec can need (its import name) -> the tune_app extra that installs it
# (pyproject.toml's `[project.optional-dependencies]`). The method, tracker and trainable tables
# name the packages each entry imports; this one table says how to get each.
EXTRAS: dict[str, str] = {
    "optuna": "optuna",
    "cmaes": "optuna",  # Optuna's CMA-ES sampler
    "hpbandster": "bohb",
    "ConfigSpace": "bohb",
    "sklearn": "pb2",
    "onnxruntime": "bench",  # the lcbench trainable
    "mlflow": "mlflow",
    "wandb": "wandb",
}


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: in sys.modules as None (blocked)
        return False


def install_line(extra: str) -> str:
    """The command that installs tune_app's `extra` into a checkout's environment."""
    return f'pip install -e ".[{extra}]"'


def require(what: str, packages: Sequence[str], path: str) -> None:
    """Raise SpecError at `path` naming the first of `packages` (import names) not installed,
    with the line that installs its extra (`EXTRAS`), or whose import raises, with its error.

    Each is imported here, before Ray starts: a package found but broken failed only in the
    trials, or in Tune's loop after the first trials (exit 75, "resume", which cannot help).
    """
    for package in packages:
        extra = EXTRAS.get(package)
        line = install_line(extra) if extra else f"pip install {package}"
        if not installed(package):
            raise SpecError(
                f"{what} needs the {package} package, which is not installed",
                path=path,
                suggestion=line,
            )
        try:
            importlib.import_module(package)
        except Exception as err:  # any error: an import runs the package's own code
            raise SpecError(
                f"{what} needs the {package} package, whose import fails: {import_failure(err)}",
                path=path,
                suggestion=f"reinstall it: {reinstall_line(package)}",
            ) from None


def reinstall_line(package: str) -> str:
    """The command that reinstalls the distribution providing import name `package`."""
    from importlib import metadata

    found = metadata.packages_distributions().get(package) or [package]
    return f"pip install --force-reinstall --no-deps {found[0]}"


def check_methods(search: Options, scheduler: Options, key_path: str) -> None:
    """Refuse an experiment at `key_path` whose searcher or scheduler needs a missing package."""
    from tune_app.methods import scheduler_of, searcher_of

    pairs: tuple[tuple[Any, Options, str], ...] = (
        (searcher_of(search), search, "search"),
        (scheduler_of(scheduler), scheduler, "scheduler"),
    )
    for entry, options, key in pairs:
        what, named = f"{key}: {entry.name}", entry.packages
        packages: tuple[str, ...] = named(options) if callable(named) else named
        if callable(named):  # a variant of its options may need more than its defaults
            defaults = type(options)(type=options.type)
            if set(packages) != set(named(defaults)):
                what += f" ({_variant(options, defaults)})"
        require(what, packages, f"{key_path}.{key}")


def _variant(options: Options, defaults: Options) -> str:
    """`sampler cmaes`: the options set apart from their defaults."""
    given, usual = options.model_dump(), defaults.model_dump()
    return ", ".join(f"{k} {v}" for k, v in given.items() if usual.get(k) != v and k != "type")
