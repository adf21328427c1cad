"""Commands shown with their output in the docs, run in-process so the output is generated and
not copied: on 2 CPUs whatever the machine, with the working folder written as `.`."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from unittest import mock

from tune_app.cli import commands as cli

CPUS = 2  # the machine the docs describe, so the pages do not change with the one building them


@contextlib.contextmanager
def _inside(folder: Path):
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def tune_app(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """`python -m tune_app ARGS` run in `cwd`: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        _inside(cwd),
        mock.patch("os.cpu_count", return_value=CPUS),
        # The reader's PYTHONPATH, not the build's (the checkout): messages list its folders.
        mock.patch.dict(os.environ, {"PYTHONPATH": ""}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = cli.main(args)
    here = str(cwd.resolve())

    def local(text: str) -> str:
        return text.replace(here + "/", "").replace(here, ".")

    return code, local(out.getvalue()), local(err.getvalue())
