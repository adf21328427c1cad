"""What the command line's table is made of: a command (`Command`), its arguments (`arg`), and
a parser of flags several commands share (`parent_parser`), and what a command returns when it
did not fail; `tune_app.cli` holds the table."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

EXIT_OK, EXIT_FAILED = 0, 1  # bad input exits with its error's code, 2; Ctrl-C 130


@dataclass(frozen=True)
class Argument:
    """One `add_argument` call: its flags (or positional name) and options."""

    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Argument:
    return Argument(flags, options)


@dataclass(frozen=True)
class Command:
    """A subcommand: its handler (which returns the exit code), its help (also its description),
    the groups of SHARED flags it takes, and its own arguments."""

    name: str
    handler: Callable[[argparse.Namespace], int]
    help: str
    shared: tuple[str, ...] = ()
    arguments: tuple[Argument, ...] = ()


def parent_parser(arguments: Sequence[Argument]) -> argparse.ArgumentParser:
    """A parser holding only `arguments` (mutually exclusive if several), for `parents=`."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_mutually_exclusive_group() if len(arguments) > 1 else parent
    for a in arguments:
        group.add_argument(*a.flags, **a.options)
    return parent
