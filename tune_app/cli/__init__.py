"""The command line: `commands` (one table of commands, each parsed into one call of the Python
API or a reader, errors mapped to exit codes) built from `table`'s parts; `printing` (what a
command prints around a run) and `console` (the plan `validate` prints, a run's summary);
`doctor` (the installed Ray against the private symbols the app relies on)."""

from tune_app.cli.commands import main

__all__ = ["main"]
