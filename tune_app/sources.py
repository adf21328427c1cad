"""Fingerprints of the code a run runs: the user's modules and the app itself, kept in run.json
so `resume` can say what changed since the run began.

A trainable edited between a kill and its resume mixes two versions' scores in one search;
an app upgraded in between may no longer read the search state Tune saved (it pickles the
app's scheduler, searcher and callback objects). Neither can be undone, but both can be said.
Ray-free.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path

import tune_app
from tune_app.user_code.locating import is_local_origin, on_path


def module_fingerprints(modules: tuple[str, ...], search_path: tuple[str, ...]) -> dict[str, str]:
    """file -> sha256 (16 hex digits) of each module of user code found in `search_path` (an
    installed package is left out: its version is the package's)."""
    found: dict[str, str] = {}
    for name in modules:
        with on_path(search_path):
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
        origin = spec.origin if spec is not None else None
        if origin and origin.endswith(".py") and is_local_origin(origin, search_path):
            found[origin] = _digest(Path(origin).read_bytes())
    return found


def changed_modules(recorded: dict[str, str]) -> list[str]:
    """The files of `recorded` whose content is not what it was (or that are gone)."""
    changed = []
    for file, digest in recorded.items():
        path = Path(file)
        if not path.is_file() or _digest(path.read_bytes()) != digest:
            changed.append(file)
    return changed


@cache
def app_fingerprint() -> str:
    """sha256 (16 hex digits) of the app's own source: its version says too little (0.1.0 is
    every commit's)."""
    root = Path(tune_app.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
