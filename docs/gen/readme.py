"""The generated parts of hand-written pages, each between `<!-- generated: NAME -->` and
`<!-- end: NAME -->`: README's example spec with what `validate` prints for it and its commands
table, and the warnings `validate` prints for an old RLlib tuned example."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from docs.gen.cli_ref import subparsers
from docs.gen.common import table
from docs.gen.shell import tune_app
from tune_app.cli import commands as cli

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = "search_spaces/grid.yaml"


def _example() -> str:
    spec = (ROOT / EXAMPLE).read_text()
    code, out, err = tune_app(["validate", EXAMPLE], ROOT)
    assert code == 0, err
    return (
        f"```yaml\n# {EXAMPLE}\n{spec}```\n\n"
        f"```text\n$ python -m tune_app validate {EXAMPLE}\n{out}```\n"
    )


def _commands() -> str:
    parsers = subparsers(cli.build_parser())
    rows = []
    for command in cli.COMMANDS:
        words = parsers[command.name].format_usage().split()[2:]
        usage = " ".join(w for w in words if w not in ("[-h]", "[--debug]"))
        rows.append([f"`{usage}`", command.help])
    return table(("command", "what it does"), rows)


def _ppo_cartpole_warnings() -> str:
    spec = "tests/rllib_specs/ppo-cartpole.yaml"
    code, _, err = tune_app(["validate", spec], ROOT)
    assert code == 0, err
    return f"```text\n$ python -m tune_app validate {spec}\n{err}...\n```\n"


PARTS: dict[str, Callable[[], str]] = {
    "example": _example,
    "commands": _commands,
    "ppo-cartpole-warnings": _ppo_cartpole_warnings,
}
# Pages holding generated parts.
PAGES = ("README.md", "docs/tutorials/own-code.md")


def filled(text: str) -> str:
    """README's text with every generated part made anew."""
    for name, make in PARTS.items():
        begin, end = f"<!-- generated: {name} -->\n", f"<!-- end: {name} -->"
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        filler = begin + make() + end
        text = pattern.sub(lambda _, filler=filler: filler, text)
    return text
