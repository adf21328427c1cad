"""`tune_app doctor`: whether the installed Ray is one the app is checked on, and whether each
private Ray symbol the app relies on (`ray_internals.symbols`) holds in it, without starting Ray.
The answer an issue report needs, and the first thing to run beside a cluster's own Ray."""

from __future__ import annotations

import platform
from dataclasses import dataclass

from tune_app.ray_internals import symbols, versions


@dataclass(frozen=True)
class Diagnosis:
    """What `doctor` found: Ray's version (None: not installed), whether it is in the checked
    range, and each private symbol that does not hold, with why."""

    ray: str | None
    checked: bool
    broken: tuple[tuple[symbols.Symbol, str], ...]

    @property
    def healthy(self) -> bool:
        return self.ray is not None and not self.broken


def diagnose() -> Diagnosis:
    """Check the installed Ray (its modules are imported; Ray is not started)."""
    ray = versions.installed()
    if ray is None:
        return Diagnosis(None, False, ())
    return Diagnosis(ray, versions.checked(ray), tuple(symbols.broken()))


def lines(found: Diagnosis) -> list[str]:
    """What `doctor` prints, one line each; the last says whether all holds."""
    out = [f"Python {platform.python_version()}"]
    if found.ray is None:
        return [*out, 'Ray: not installed (pip install -c constraints.txt -e ".[test]")']
    where = "inside" if found.checked else "OUTSIDE"
    out.append(f"Ray {found.ray}: {where} the releases tune_app is checked on ({versions.CHECKED})")
    out += [f"broken: {why} (used by ray_internals.{s.used_by})" for s, why in found.broken]
    held = len(symbols.SYMBOLS) - len(found.broken)
    out.append(f"private Ray symbols the app relies on: {held} of {len(symbols.SYMBOLS)} hold")
    return out
