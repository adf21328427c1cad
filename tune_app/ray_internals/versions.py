"""The Ray releases the app is checked on, and every behaviour that differs between them, decided
here by the installed release's version (read from its metadata, without importing Ray), never
by trying one way and catching the failure.

CI runs the whole suite on the newest release of the range (constraints.txt pins it) and the
example specs and the Ray tests of schedulers, resume, seeds, PBT, sparse metrics and signals on
the oldest (`.ci/run`'s second stage). Outside the range the app still runs, with one
`UncheckedRayWarning`.
"""

from __future__ import annotations

import re
import warnings
from importlib import metadata

# The oldest and the newest release checked, as (major, minor); a patch release of either is in.
OLDEST = (2, 55)
NEWEST = (2, 60)
CHECKED = f"{OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}"


class UncheckedRayWarning(UserWarning):
    """The installed Ray is outside the releases the app is checked on. Its own category, so a
    test or a CI job can make it an error: `-W error::tune_app.UncheckedRayWarning`."""


def installed() -> str | None:
    """The installed Ray's version, read from its metadata (no import), or None."""
    try:
        return metadata.version("ray")
    except metadata.PackageNotFoundError:
        return None


def release(version: str) -> tuple[int, int]:
    """(major, minor) of a version such as 2.58.1, 2.61.0rc1 or 3.0.0.dev0."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None:
        raise ValueError(f"not a Ray version: {version!r}")
    return int(found[1]), int(found[2])


def checked(version: str) -> bool:
    """Whether `version` is inside the checked range."""
    return OLDEST <= release(version) <= NEWEST


def unchecked(version: str | None = None) -> str | None:
    """One line when the installed Ray (or `version`) is outside the checked range, else None."""
    version = version or installed()
    if version is None or checked(version):
        return None
    return (
        f"Ray {version} is installed, but tune_app is checked on Ray {CHECKED}; its schedulers "
        f"and start-up rely on Ray internals that may differ (`python -m tune_app doctor` checks "
        f'them; pip install -c constraints.txt -e ".[test]" installs the pinned Ray)'
    )


def warn_unchecked(version: str | None = None) -> None:
    """Warn once per process (Python's default filter) when Ray is outside the checked range."""
    message = unchecked(version)
    if message is not None:
        warnings.warn(message, UncheckedRayWarning, stacklevel=3)


def _major(package: str) -> int | None:
    try:
        return release(metadata.version(package))[0]
    except (metadata.PackageNotFoundError, ValueError):
        return None


def bohb_takes_ranges(ray: str | None = None) -> bool:
    """Whether Tune's TuneBOHB can search a numeric range with the installed ConfigSpace.

    Ray 2.55's TuneBOHB hands ConfigSpace `q=` for every numeric range (None when unquantized),
    and ConfigSpace 1.x no longer takes it: "UniformFloatHyperparameter.__init__() got an
    unexpected keyword argument 'q'", for uniform, loguniform, randint and lograndint alike.
    Ray 2.56 dropped q. A choice still works (ConfigSpace's categorical never took q).
    """
    ray = ray or installed()
    if ray is None or release(ray) >= (2, 56):
        return True
    return (_major("ConfigSpace") or 0) < 1
