"""How the app is invoked in the commands it prints: every printed command runs as printed when
pasted into a shell with the app's environment active (`tune_app` alone is no executable; the
`tune-app` script may not be on PATH in a notebook's kernel, `python -m` always is)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

APP = "python -m tune_app"


def resume_command(folders: Sequence[str], address: str | None = None) -> str:
    """The command that continues the runs in `folders`, as a shell runs it when pasted
    (`python -m tune_app`, each folder quoted where it must be): `resume` takes one folder, an
    experiment's, or the storage folder holding them where it holds no other run to resume
    (`resumed_together`); else one `resume` per folder. A run that joined the cluster at
    `address` (`--address`) is resumed there: without it, `resume` starts a local Ray."""
    from tune_app.rundir.location import resumed_together

    on = f" --address {shlex.quote(address)}" if address else ""
    one = folders[0] if len(folders) == 1 else resumed_together(folders)
    if one is not None:
        return f"{APP} resume {shlex.quote(one)}{on}"
    return " && ".join(f"{APP} resume {shlex.quote(loc)}{on}" for loc in folders)
