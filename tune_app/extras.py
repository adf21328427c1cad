"""Optional packages: whether one is installed (found without importing it), and the refusal of a
spec that needs a missing one, with the `pip install` line of the tune_app extra that installs it.

The searcher, scheduler and tracker tables name, per entry, the packages it imports and its
extra (pyproject.toml's `[project.optional-dependencies]`); the plan checks them before Ray
starts. The line leaves out `-c constraints.txt`, whose Ray pin a user beside another Ray
cannot take.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tune_app.errors import SpecError

if TYPE_CHECKING:
    from tune_app.methods import Options


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: in sys.modules as None (blocked)
        return False


def install_line(extra: str) -> str:
    """The command that installs tune_app's `extra` into a checkout's environment."""
    return f'pip install -e ".[{extra}]"'


def require(what: str, packages: Sequence[str], extra: str | None, path: str) -> None:
    """Raise SpecError at `path` naming the first of `packages` (import names) not installed."""
    for package in packages:
        if not installed(package):
            raise SpecError(
                f"{what} needs the {package} package, which is not installed",
                path=path,
                suggestion=install_line(extra) if extra else f"pip install {package}",
            )


def check_methods(search: Options, scheduler: Options, key_path: str) -> None:
    """Refuse an experiment at `key_path` whose searcher or scheduler needs a missing package."""
    from tune_app.methods import scheduler_of, searcher_of

    for entry, key in ((searcher_of(search), "search"), (scheduler_of(scheduler), "scheduler")):
        require(f"{key}: {entry.name}", entry.packages, entry.extra, f"{key_path}.{key}")
