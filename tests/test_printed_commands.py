"""Every command the app prints runs as printed when pasted into a shell with the venv active:
`python -m tune_app ...` (tune_app.command.APP), never a bare `tune_app ...`, which is no
executable."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

COMMANDS = "run|resume|analyze|report|best|evaluate|validate|tensorboard|list|doctor"
# Where a command starts: a message's start, a backtick, a parenthesis, after "with" or a colon.
BARE = re.compile(rf"(?:^|[`(]|: |with |then )tune_app ({COMMANDS})\b")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The string literals of a module (f-strings' literal parts too), docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]  # fmt: skip


def test_no_message_names_a_bare_tune_app_command():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in sorted((ROOT / "tune_app").rglob("*.py"))
        for line, text in _strings(ast.parse(path.read_text()))
        if BARE.search(text)
    ]
    found += [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in sorted((ROOT / "tune_app" / "templates").glob("*.j2"))
        for line in path.read_text().splitlines()
        if BARE.search(line) and not line.lstrip().startswith("{#")
    ]
    assert not found, "\n".join(found)


def test_the_resume_command_a_run_prints_runs():
    from tune_app.api import resume_command

    assert resume_command(["out/e"]).split()[:4] == ["python", "-m", "tune_app", "resume"]
