"""The package's shape: imports run one way (no module reaches itself through others, counting
imports inside functions and under TYPE_CHECKING, as a reader of the code sees them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "tune_app"


def _name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of `package` -> the package's modules it imports anywhere in its text (an
    import of a package its module sits in is not counted: that package is run first anyway)."""
    files = {_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                ]
            else:
                continue
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    found.add(target)
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: groups of two or more modules that each reach all the others."""
    reach = {node: _reachable(graph, node) for node in graph}
    found = {
        tuple(sorted(n for n in reach[node] if node in reach[n]))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in found)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen


def test_no_import_circle_in_the_package():
    """A type a module shares lives in a leaf it and its users import; a check lives beside its
    caller. An import circle names the imports that close it."""
    graph = import_graph(PACKAGE)
    found = circles(graph)
    closing = [
        f"{a} -> {', '.join(sorted(b for b in graph[a] if b in group))}"
        for group in found
        for a in group
    ]
    assert not found, "import circles:\n" + "\n".join(closing)


def test_the_circle_finder_finds_a_circle(tmp_path):
    """The check above could fail: a lazy import back up is a circle too."""
    pkg = tmp_path / "tune_app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tune_app.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from tune_app import a\n")
    (pkg / "c.py").write_text("import tune_app.a\n")
    assert circles(import_graph(pkg)) == [["tune_app.a", "tune_app.b"]]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: _name(p))
def test_no_module_over_500_lines(path):
    """A module that outgrows 500 lines has taken a second job: split it along its jobs."""
    assert len(path.read_text().splitlines()) <= 500


@pytest.mark.parametrize(
    ("argv", "own"),
    [
        (["python", "-m", "tune_app", "run", "s.yaml"], True),
        (["/x/python", "-u", "-X", "importtime", "-m", "tune_app", "resume", "out/e"], True),
        (["python", "-m", "tune_app", "evaluate", "out/e"], True),
        (["python", "-c", "import tune_app; tune_app.run(spec)"], True),
        (["/venv/bin/ray", "start", "--head"], True),
        (["python", "-m", "tune_app", "analyze", "out/e"], False),
        (["python", "-m", "tune_app", "tensorboard", "out"], False),
        (["python", "-m", "pip", "install", "ray"], False),
        (["/venv/lib/ray/core/src/ray/raylet/raylet", "--node_ip_address=127.0.0.1"], False),
    ],
)
def test_the_tier_guard_knows_a_process_that_starts_a_run_of_its_own(argv, own):
    """The first tier starts no Ray but the session's: a test that starts one unmarked fails
    (tests/conftest.py's `own_runs_are_marked`), so `pytest -m "not ray"` never starts Ray."""
    from tests.conftest import starts_own_run

    assert starts_own_run(argv) is own


def test_an_e2e_test_is_in_the_second_tier_and_needs_ray(pytestconfig):
    """Collection marks them from `e2e`: README's `pytest` (addopts `-m "not slow"`) leaves out
    what starts processes and Ray of its own."""
    from tests.conftest import pytest_collection_modifyitems

    class Item:
        def __init__(self, *marks: str, fixturenames: tuple[str, ...] = ()) -> None:
            self.marks, self.fixturenames = set(marks), fixturenames

        def get_closest_marker(self, name: str) -> object | None:
            return name if name in self.marks else None

        def add_marker(self, mark: pytest.MarkDecorator) -> None:
            self.marks.add(mark.name)

    e2e, session, pure = Item("e2e"), Item(fixturenames=("ray_session",)), Item()
    pytest_collection_modifyitems([e2e, session, pure])
    assert e2e.marks == {"e2e", "ray", "slow"}
    assert session.marks == {"ray"} and pure.marks == set()
    assert " ".join(pytestconfig.getini("addopts")) == "-m not slow"
