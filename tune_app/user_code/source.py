"""What a module's source shows, read without running it: the names its top level binds, and
what a name it imports is (a module; a function or a class of another module, followed through
re-exports). Used by the gate (`tune_app.user_code`) at validate."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path

from tune_app.user_code.locating import static_spec


def parsed_source(module: ModuleSpec | None) -> ast.Module | None:
    """The module's parsed source, where it is plain Python that parses; None elsewhere (a
    missing or compiled module, a syntax error: importing it reports the problem, at run)."""
    if module is None or not module.origin or not module.origin.endswith(".py"):
        return None
    try:
        return ast.parse(Path(module.origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def bound_names(tree: ast.Module) -> set[str] | None:
    """Every name the module's top level binds, or None where it may bind names the source does
    not show (`from x import *`, a module `__getattr__`, writes to `globals()`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Name) and node.id in ("globals", "vars", "setattr"):
            return None
    for node in tree.body:
        names.update(binds(node))
    return None if "__getattr__" in names else names


BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.ExceptHandler)
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def plain_definitions(tree: ast.Module | None) -> dict[str, Definition]:
    """The functions and classes the module's top level defines, by name, where its source
    shows what the name ends bound to: a name another top-level statement binds too (`Cls =
    wrap(Cls)`, an import, a `def` inside an `if`) is left out, as is every name of a module
    that may bind names unseen (`bound_names`): what those are, only the import tells."""
    if tree is None or bound_names(tree) is None:
        return {}
    defined: dict[str, Definition] = {}
    other: set[str] = set()
    for node in tree.body:
        if isinstance(node, Definition):
            defined[node.name] = node  # the last of one name is what it ends bound to
        else:
            other.update(binds(node))
    return {name: node for name, node in defined.items() if name not in other}


def binds(node: ast.AST) -> Iterator[str]:
    """The names a top-level statement binds (inside its blocks too: `if`, `try`, `with`)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Import | ast.ImportFrom):
        yield from (a.asname or a.name.split(".")[0] for a in node.names)
    elif isinstance(node, BLOCKS):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
        for child in [*children, *getattr(node, "handlers", ())]:
            yield from binds(child)
    else:
        stores = (t for t in ast.walk(node) if isinstance(t, ast.Name))
        yield from (t.id for t in stores if isinstance(t.ctx, ast.Store))


def followed(
    tree: ast.Module, module: ModuleSpec, name: str, depth: int = 4
) -> tuple[ast.stmt, str] | None:
    """What a module's imports (at its top level, or inside its `if` and `try` blocks) bind
    `name` to, and the module where that is: the definition in X's source that `from X import
    name` names, followed `depth` imports deep, or the `import` statement that binds it to a
    module, without importing anything; None where the source does not show it plainly."""
    for node in statements(tree.body):
        if isinstance(node, ast.Import) and name in binds(node):
            return node, module.name
        if not isinstance(node, ast.ImportFrom) or depth == 0:
            continue
        alias = next((a for a in node.names if (a.asname or a.name) == name), None)
        if alias is None or node.module is None:
            continue
        package = module.name if module.submodule_search_locations else module.parent
        try:
            target = importlib.util.resolve_name("." * node.level + node.module, package or "")
        except (ImportError, ValueError):
            return None
        found = static_spec(target)
        source = parsed_source(found)
        if found is None or source is None:
            return None
        for defined in statements(source.body):
            if isinstance(defined, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if defined.name == alias.name:
                    return defined, target
        return followed(source, found, alias.name, depth - 1)
    return None


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those inside its `if`, `try` and `with` blocks too."""
    for node in body:
        yield node
        if isinstance(node, BLOCKS):
            children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
            handlers = [s for h in getattr(node, "handlers", ()) for s in h.body]
            yield from statements([*children, *handlers])
