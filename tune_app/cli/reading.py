"""The commands that read a run back from its folder (`analyze`, `best`, `report`, `compare`,
`tensorboard`), and `evaluate`, which reads one and runs its best configurations again: each
parses nothing itself (the table in `cli.commands` did) and prints what the reader returns."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tune_app.cli.table import EXIT_OK
from tune_app.errors import TuneAppError, printable
from tune_app.words import counted

if TYPE_CHECKING:
    from tune_app.plan.types import Plan


def cmd_analyze(args: argparse.Namespace) -> int:
    from tune_app.readback import analyze
    from tune_app.rundir import read as results

    if args.top is not None and args.top < 1:
        raise TuneAppError(f"--top must be at least 1, got {args.top}")
    if args.importance and args.format != "json":
        raise TuneAppError("--importance goes with --format json (the report shows it as a page)")
    print(printable(analyze.render(results.load(args.dir), args.format, args.top, args.importance)))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from tune_app.readback import watch

    if args.every is not None and not args.watch:
        raise TuneAppError("--every needs --watch (how often a live page is rewritten)")
    every = None if not args.watch else watch.DEFAULT_EVERY_S if args.every is None else args.every
    print(watch.page(args.dir, args.out, every))  # with --watch: once the run has ended
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from tune_app import api

    found = api.compare(*args.runs, html=args.html)
    print(printable(found.json() if args.format == "json" else found.table()))
    if found.page:
        print(f"tune_app: wrote {found.page}", file=sys.stderr)
    return EXIT_OK


def cmd_best(args: argparse.Namespace) -> int:
    from tune_app.readback import best

    data, found = best.best_spec(args.dir, seeds=args.seeds, pick=args.pick)
    print(printable(best.render(data, found, args.format)))
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    from tune_app.api import run
    from tune_app.cli.printing import evaluated, print_plan_start, print_plan_warnings
    from tune_app.readback import best
    from tune_app.rundir.files import for_the_user, write_text

    if args.top < 1:
        raise TuneAppError(f"--top must be at least 1, got {args.top}")
    data, found = best.best_spec(args.dir, seeds=args.seeds, top=args.top, evaluating=True)
    text = best.render(data, found, "yaml")
    with for_the_user():
        spec_file, root, elsewhere = best.evaluation_home(found[0].run)
        write_text(spec_file, text + "\n")
    if elsewhere:
        print(f"tune_app: {elsewhere}", file=sys.stderr)
    most = max(b.rank for b in found)  # of each experiment, where it has that many
    asked = f"the top {counted(most, 'configuration')}"
    if most < args.top:
        asked += f" ({args.top} asked: the run has no more)"
    print(f"tune_app: {asked} on {args.seeds} fresh seeds: {spec_file}")
    shown = print_plan_warnings if args.quiet else print_plan_start
    planned = []

    def on_plan(plan: Plan) -> None:
        planned.append(plan)
        shown(plan)

    try:
        return evaluated(
            lambda: run(
                spec_file,
                storage_path=args.storage_path or root,
                address=args.address,
                verbosity=0 if args.quiet else 1,
                command=args.argv,
                on_plan=on_plan,
            ),
            found,
            spec_file,
        )
    except TuneAppError:
        if not planned:  # refused before its plan passed (a bad --storage-path): nothing ran
            spec_file.unlink(missing_ok=True)
        raise


def cmd_tensorboard(args: argparse.Namespace) -> int:
    from tune_app.tensorboard.server import serve

    serve(args.dir, host=args.host, port=args.port)  # until Ctrl-C
    return EXIT_OK
