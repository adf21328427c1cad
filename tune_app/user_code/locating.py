"""Where a module a spec names lies, found without running it: the standard library, an
installed package, or the user's own folders (the spec's, the working directory, PYTHONPATH's).
Used by the gate (`tune_app.user_code`) and the code fingerprints (`tune_app.sources`)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

_STDLIB_DIRS = tuple(
    str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("stdlib", "platstdlib")
)
_INSTALLED_DIRS = ("site-packages", "dist-packages")


def spec_of(module_name: str, folders: tuple[str, ...]) -> ModuleSpec | None:
    """`importlib.util.find_spec`, without importing the parent packages of a dotted name that
    lie in `folders` (the spec's, the working directory): find_spec imports them, and their
    `__init__` would run at validate (a package beside a spec could write files, or end the
    process with exit 0, a silent pass). There each part is looked up in the folders of the
    part before it; a package elsewhere (installed, the standard library) is found as Python
    finds it."""
    first, *rest = module_name.split(".")
    found = importlib.util.find_spec(first)  # a top-level name is found, not imported
    if found is None or not rest:
        return found
    origin = found.origin if found.has_location else None  # not "frozen" or "built-in"
    places = [origin] if origin else list(found.submodule_search_locations or ())
    if not any(is_local_origin(p, folders) for p in places):
        return importlib.util.find_spec(module_name)
    return static_spec(module_name, imported=True)


def pythonpath_folders() -> list[Path]:
    """PYTHONPATH's folders, where a user keeps code (`PYTHONPATH=src`): not the standard
    library's, nor an installed package's (a site-packages put on PYTHONPATH)."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    folders = [Path(p).resolve() for p in entries if p]
    return [
        f
        for f in folders
        if f.is_dir()
        and not any(d in f.parts for d in _INSTALLED_DIRS)
        and not any(f.is_relative_to(d) for d in _STDLIB_DIRS)
    ]


def is_user_origin(origin: str | None) -> bool:
    """Whether a module loaded from `origin` is outside the standard library and the builtins."""
    if origin is None or origin in ("built-in", "frozen"):
        return False
    path = str(Path(origin).resolve())
    in_stdlib = any(path.startswith(d + "/") for d in _STDLIB_DIRS)
    return not in_stdlib or any(d in path for d in _INSTALLED_DIRS)


def is_local_origin(origin: str | None, folders: tuple[str, ...]) -> bool:
    """Whether a module's file lies in one of `folders` (the spec's, the working directory,
    PYTHONPATH's), not in an installed package. (A builtin module's origin, "built-in", is no
    file: as a path it would lie in the working directory.)"""
    if not origin or origin in ("built-in", "frozen"):
        return False
    path = Path(origin).resolve()
    return not any(d in path.parts for d in _INSTALLED_DIRS) and any(
        path.is_relative_to(f) for f in folders
    )


def forget_stale(module_name: str, search_path: tuple[str, ...]) -> None:
    """Drop a module of that name imported earlier in this process from another folder (another
    spec's), so the spec's own module is imported, not the cached one."""
    top = module_name.split(".")[0]
    cached = sys.modules.get(top)
    origin = getattr(cached, "__file__", None)
    if cached is None or origin is None or is_local(cached, search_path):
        return
    if any((Path(f) / top).is_dir() or (Path(f) / f"{top}.py").is_file() for f in search_path):
        for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
            del sys.modules[name]


def shadowing(folders: tuple[str, ...]) -> Iterator[tuple[Path, str]]:
    """Each module file or package in `folders` named as a module Python finds elsewhere, with
    what it shadows: a standard-library module (not a builtin or frozen one) or an installed
    distribution's top-level one. Every process started with the folder on its path imports it
    in that module's place, the local Ray's own included."""
    installed = metadata.packages_distributions()
    for folder in map(Path, folders):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.stem if entry.suffix == ".py" else entry.name
            if entry.suffix != ".py" and not (entry / "__init__.py").is_file():
                continue
            if name in sys.stdlib_module_names and not _unshadowable(name):
                yield entry, f"Python's '{name}' module"
            elif name in installed and not _installed_from(entry, installed[name], installed):
                yield entry, f"the '{name}' module of the installed {', '.join(installed[name])}"


def _installed_from(entry: Path, dists: list[str], installed: Mapping[str, list[str]]) -> bool:
    """Whether `entry` is the code of one of `dists`, the distributions installing its name: in
    the project folder of an editable install, or beside a module of that distribution this
    process runs (the app's own packages, in the checkout the app runs from)."""
    entry = entry.resolve()
    for dist in dists:
        url = json.loads(metadata.distribution(dist).read_text("direct_url.json") or "{}")
        if url.get("dir_info", {}).get("editable") and url["url"].startswith("file://"):
            if entry.is_relative_to(Path(url2pathname(urlparse(url["url"]).path)).resolve()):
                return True
        for top in (t for t, dists in installed.items() if dist in dists):
            file = getattr(sys.modules.get(top), "__file__", None)
            up = 1 if file and Path(file).name == "__init__.py" else 0  # a package's folder
            if file and entry.parent == Path(file).resolve().parents[up]:
                return True
    return False


def _unshadowable(name: str) -> bool:
    return (
        name in sys.builtin_module_names
        or importlib.machinery.FrozenImporter.find_spec(name) is not None
    )


def is_local(module: Any, folders: tuple[str, ...]) -> bool:
    return is_local_origin(getattr(module, "__file__", None), folders)


@contextmanager
def on_path(folders: tuple[str, ...]) -> Iterator[None]:
    added = [f for f in folders if f not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for f in added:
            sys.path.remove(f)


def static_spec(module_name: str, imported: bool = False) -> ModuleSpec | None:
    """Where `module_name` lies, each part looked up in its parent package's folders (with
    `imported`, a parent imported already in its own `__path__`): nothing is imported, not even
    the parents (`importlib.util.find_spec` imports them)."""
    first, *rest = module_name.split(".")
    found = importlib.util.find_spec(first)  # a top-level name is found, not imported
    for i in range(1, len(rest) + 1):
        if found is None or found.submodule_search_locations is None:
            return None
        name = ".".join([first, *rest[:i]])
        parent = sys.modules.get(name.rpartition(".")[0]) if imported else None
        where = getattr(parent, "__path__", None) or found.submodule_search_locations
        found = _path_spec(name, list(where))
    return found


def _path_spec(name: str, where: list[str]) -> ModuleSpec | None:
    """`PathFinder.find_spec(name, where)`, also for a namespace package (a folder with no
    `__init__.py`) inside a package not imported: PathFinder looks its parent up in
    sys.modules (KeyError), where the static walk never puts it."""
    try:
        return importlib.machinery.PathFinder.find_spec(name, where)
    except KeyError:
        last = name.rpartition(".")[2]
        folders = [os.path.join(w, last) for w in where if os.path.isdir(os.path.join(w, last))]
        found = ModuleSpec(name, None, is_package=True)
        found.submodule_search_locations = folders
        return found
