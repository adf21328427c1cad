"""docs/reference/cli.md: every command, its usage and arguments, from the parser that
tune_app.cli.commands builds out of its COMMANDS table."""

from __future__ import annotations

import argparse
import os

from docs.gen.common import HEADER, code, table
from tune_app.cli import commands as cli


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _argument(action: argparse.Action) -> list[str]:
    name = ", ".join(action.option_strings) or action.dest
    if action.option_strings and action.nargs != 0:
        name += " " + (action.metavar or action.dest.upper())
    if action.choices and action.option_strings:
        name += " {" + ",".join(map(str, action.choices)) + "}"
    return [code(name), action.help or ""]


def page() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    parser = cli.build_parser()
    parts = [
        HEADER,
        "# Commands\n\n",
        "`python -m tune_app COMMAND` (or the `tune-app` script). `--debug`, before or after the "
        "command, shows the traceback behind an error.\n\n",
        table(("command", "what it does"), [[code(c.name), c.help] for c in cli.COMMANDS]),
    ]
    for name, sub in subparsers(parser).items():
        usage = sub.format_usage().replace("usage: ", "", 1).strip()
        rows = [
            _argument(a)
            for a in sub._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
        ]
        parts.append(f"\n## {name}\n\n{sub.description}\n\n```text\n{usage}\n```\n\n")
        parts.append(table(("argument", "meaning"), rows))
    return "".join(parts)
