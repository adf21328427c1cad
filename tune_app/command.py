"""How the app is invoked in the commands it prints: every printed command runs as printed when
pasted into a shell with the app's environment active (`tune_app` alone is no executable; the
`tune-app` script may not be on PATH in a notebook's kernel, `python -m` always is)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

APP = "python -m tune_app"


def resume_command(folders: Sequence[str]) -> str:
    """The command that continues the runs in `folders`, as a shell runs it when pasted
    (`python -m tune_app`, each folder quoted where it must be): `resume` takes one folder, an
    experiment's or the storage folder holding several."""
    from tune_app.rundir.location import parent_of

    resume = f"{APP} resume"
    parents = {parent_of(loc) for loc in folders}
    if len(folders) == 1:
        return f"{resume} {shlex.quote(folders[0])}"
    if len(parents) == 1:
        return f"{resume} {shlex.quote(parents.pop())}"
    return " && ".join(f"{resume} {shlex.quote(loc)}" for loc in folders)
