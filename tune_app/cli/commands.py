"""The command line: one table of commands, each parsing its arguments into one call (`run` and
`resume` into `tune_app.api`'s) and printing what it returns; errors map to exit codes.

Exit codes: 0 done, 1 a trial failed, 2 bad spec or usage, 74 a write of the run's files failed
(a full disk: sysexits' EX_IOERR; the run stopped as by Ctrl-C, resumable once fixed), 75
Tune's own loop failed or its Ray head was lost (EX_TEMPFAIL; resumable), 130 interrupted (143
by SIGTERM, 129 by SIGHUP).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tune_app import interrupts
from tune_app.cli.printing import (
    earlier_runs,
    interrupted_line,
    one_line_warnings,
    print_layouts,
    print_plan_start,
    print_plan_warnings,
    print_warnings,
    shown,
    stdout_while_read,
)
from tune_app.cli.reading import (
    cmd_analyze,
    cmd_best,
    cmd_compare,
    cmd_evaluate,
    cmd_report,
    cmd_tensorboard,
)
from tune_app.cli.table import EXIT_FAILED, EXIT_OK, Argument, Command, arg, parent_parser
from tune_app.errors import SpecErrors, TuneAppError, printable
from tune_app.interrupts import as_interrupts
from tune_app.readback.analyze import FORMATS

if TYPE_CHECKING:
    from tune_app.api import RunResult

SHOW_TRACEBACKS = "show tracebacks of errors"


def cmd_validate(args: argparse.Namespace) -> int:
    from tune_app import api
    from tune_app.cli.console import plan_text

    plan = api.validate(
        args.spec,
        storage_path=args.storage_path,
        smoke=args.smoke,
        cpus=args.cpus,
        gpus=args.gpus,
        address=args.address,
    )
    print_warnings([*plan.warnings, *earlier_runs(plan)])
    print_layouts(plan)
    print(plan_text(plan))
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from tune_app import api
    from tune_app.spec.resolve import load

    def run() -> RunResult:
        loaded = load(args.spec)
        if not args.quiet:  # at once: planning imports the trainables, which may import Ray
            from tune_app.cli.console import start_line

            print(start_line(loaded, args.smoke), flush=True)
        return api.run(
            loaded,
            smoke=args.smoke,
            storage_path=args.storage_path,
            address=args.address,
            verbosity=_verbosity(args),
            command=args.argv,
            junit=args.junit,
            on_plan=print_plan_warnings if args.quiet else print_plan_start,
        )

    return shown(run)


def cmd_resume(args: argparse.Namespace) -> int:
    from tune_app import api

    def resume() -> RunResult:
        if not args.quiet:  # at once: planning imports the trainables, which may import Ray
            print(f"tune_app: resuming {args.dir}", flush=True)
        return api.resume(
            args.dir,
            force=args.force,
            address=args.address,
            verbosity=_verbosity(args),
            command=args.argv,
            junit=args.junit,
            on_plan=print_plan_warnings,
        )

    return shown(resume)


def _verbosity(args: argparse.Namespace) -> int:
    return 0 if args.quiet else 2 if args.verbose else 1


def cmd_list(args: argparse.Namespace) -> int:
    from tune_app.cli import console
    from tune_app.registry import registered
    from tune_app.rllib.tables import ALGORITHMS

    table = registered()
    if args.name is None:
        print(console.trainables_text(table.values()))
        print()
        print(console.algorithms_text(ALGORITHMS))
    elif args.name in table and args.word is None:
        print(console.trainables_text([table[args.name]]))
    elif args.name in ALGORITHMS:
        print(console.algorithm_keys_text(args.name, args.word))
    else:
        from tune_app.errors import did_you_mean

        if args.name in table:  # with a WORD
            raise TuneAppError(f"WORD filters an algorithm's keys: list {args.name} alone")
        names = [*table, *ALGORITHMS]
        hint = did_you_mean(args.name, names)
        raise TuneAppError(
            f"no trainable or RLlib algorithm named '{args.name}'; allowed: {', '.join(names)}"
            + (f"; {hint}" if hint else "")
        )
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from tune_app.cli.doctor import diagnose, lines

    found = diagnose()
    print("\n".join(lines(found)))
    return EXIT_OK if found.healthy else EXIT_FAILED


def cmd_schema(args: argparse.Namespace) -> int:
    from tune_app.spec.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def _versions() -> str:
    """`tune_app 0.1.0 (Ray 2.60.0)`, read from the installed packages' metadata (no import)."""
    from importlib.metadata import PackageNotFoundError, version

    from tune_app.ray_internals.versions import installed

    try:
        app = version("tune_app")
    except PackageNotFoundError:
        app = "not installed"
    return f"tune_app {app} (Ray {installed() or 'not installed'})"


# Flags several commands take, defined once; each group becomes a parent parser. A group of
# several flags makes them mutually exclusive.
SHARED: dict[str, tuple[Argument, ...]] = {
    "spec": (arg("spec", help="the YAML spec file"),),
    "dir": (arg("dir", help="an experiment folder, or the storage folder holding several"),),
    "address": (
        arg(
            "--address",
            help="join the Ray cluster at ADDR (default: RAY_ADDRESS, or start a local Ray)",
        ),
    ),
    "storage-path": (
        arg("--storage-path", help="write results here instead of the spec's storage_path"),
    ),
    "smoke": (
        arg(
            "--smoke",
            action="store_true",
            help="a tiny run of every experiment: 2 samples, 2 grid values, 2 iterations",
        ),
    ),
    "junit": (
        arg("--junit", metavar="FILE", help="write a JUnit XML report of trials and expect"),
    ),
    "verbosity": (
        arg(
            "-v",
            "--verbose",
            action="store_true",
            help="Tune's full progress tables and the trials' output as it comes (each trial's "
            "stdout and stderr are kept in its folder either way)",
        ),
        arg("-q", "--quiet", action="store_true", help="print only the final summary"),
    ),
}


def _amount(text: str) -> float:
    """A number of CPUs or GPUs: a number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"a number >= 0, got {text!r}")
    return value


# Every command takes --debug, after the command too (`tune_app run spec.yaml --debug`).
DEBUG = arg("--debug", action="store_true", default=argparse.SUPPRESS, help=SHOW_TRACEBACKS)

COMMANDS: tuple[Command, ...] = (
    Command(
        "run",
        cmd_run,
        "run the searches of a spec file",
        ("spec", "address", "storage-path", "smoke", "junit", "verbosity"),
    ),
    Command(
        "resume",
        cmd_resume,
        "continue an interrupted run from its folder",
        ("dir", "address", "junit", "verbosity"),
        (arg("--force", action="store_true", help="resume even if the spec file changed"),),
    ),
    Command(
        "validate",
        cmd_validate,
        "check a spec file and print its plan (without Ray, unless --address)",
        ("spec", "storage-path"),
        (
            arg("--smoke", action="store_true", help="the plan of the --smoke run"),
            arg(
                "--address",
                help="plan for the running Ray cluster at ADDR: its nodes are read, no trial "
                "starts",
            ),
            arg("--cpus", type=_amount, metavar="N", help="plan for a machine of N CPUs"),
            arg("--gpus", type=_amount, metavar="M", help="plan for a machine of M GPUs"),
        ),
    ),
    Command(
        "analyze",
        cmd_analyze,
        "the trials of a run, from its files (no Ray needed)",
        ("dir",),
        (
            arg("--format", choices=FORMATS, default="table", help="default: table"),
            arg(
                "--top",
                type=int,
                metavar="N",
                help="only the N best trials of each experiment (a table: 100 unless given)",
            ),
            arg(
                "--importance",
                action="store_true",
                help="with --format json: each parameter's importance (fits models: seconds)",
            ),
        ),
    ),
    Command(
        "best",
        cmd_best,
        "the best configuration of a run as a ready spec (no Ray)",
        ("dir",),
        (
            arg(
                "--format",
                choices=("yaml", "json", "overrides", "checkpoint"),
                default="yaml",
                help="a spec file (default), its JSON, experiment.config.path=value lines, or "
                "the best trial's checkpoint folder",
            ),
            arg(
                "--seeds",
                type=int,
                metavar="N",
                help="run the best configuration on N evaluation seeds (config.seed), apart from "
                "tuning's",
            ),
            arg(
                "--pick",
                metavar="NAME",
                help="several objectives: export one point of the Pareto front, the front's "
                "best on objective NAME, or the trial of id NAME (default: the whole front)",
            ),
        ),
    ),
    Command(
        "evaluate",
        cmd_evaluate,
        "re-run a run's top configurations on fresh seeds (Ray)",
        ("dir", "address"),
        (
            arg("--top", type=int, default=3, metavar="K", help="configurations (default 3)"),
            arg("--seeds", type=int, default=5, metavar="N", help="fresh seeds (default 5)"),
            arg("--storage-path", help="results folder (default: beside the run's)"),
            arg("-q", "--quiet", action="store_true", help="print only the evaluation"),
        ),
    ),
    Command(
        "report",
        cmd_report,
        "an offline HTML page of a run's plots and trials (no Ray)",
        ("dir",),
        (
            arg("--out", metavar="FILE", help="the page to write (default: DIR/report.html)"),
            arg("--watch", action="store_true", help="keep the page current until the run ends"),
            arg("--every", type=float, metavar="S", help="--watch: rewrite every S s (default 10)"),
        ),
    ),
    Command(
        "compare",
        cmd_compare,
        "several runs of one metric side by side: best with intervals, best so far, and the "
        "probability that one beats another (no Ray)",
        (),
        (
            arg("runs", nargs="+", metavar="RUN", help="run folders (two or more) or URIs"),
            arg("--html", metavar="FILE", help="also write the comparison as an HTML page"),
            arg("--format", choices=("table", "json"), default="table", help="default: table"),
        ),
    ),
    Command(
        "tensorboard",
        cmd_tensorboard,
        "serve TensorBoard on a run: scalars and HParams",
        ("dir",),
        (
            arg("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)"),
            arg(
                "--port",
                type=int,
                help="port to bind (default: 6006, or a free one when it is taken; 0: a free one)",
            ),
        ),
    ),
    Command(
        "list",
        cmd_list,
        "list the trainables and RLlib algorithms with their knobs",
        (),
        (
            arg("name", nargs="?", help="one trainable, or every config key of an algorithm"),
            arg("word", nargs="?", help="only an algorithm's keys whose name or doc has WORD"),
        ),
    ),
    Command("schema", cmd_schema, "print the JSON Schema of spec files"),
    Command(
        "doctor",
        cmd_doctor,
        "the installed Ray, and whether each private Ray symbol the app relies on holds (no "
        "Ray started)",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tune_app",
        description="Hyperparameter searches on Ray Tune and RLlib from a YAML spec.",
    )
    parser.add_argument("--debug", action="store_true", help=SHOW_TRACEBACKS)
    parser.add_argument(
        "--version", action="version", version=_versions(), help="the app's and Ray's versions"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    debug = parent_parser([DEBUG])
    parents = {name: parent_parser(arguments) for name, arguments in SHARED.items()}
    for command in COMMANDS:
        p = sub.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            parents=[debug, *(parents[name] for name in command.shared)],
        )
        p.set_defaults(handler=command.handler)
        for a in command.arguments:
            p.add_argument(*a.flags, **a.options)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        # SIGTERM and SIGHUP act as Ctrl-C, from the start
        with as_interrupts(), stdout_while_read(), warnings.catch_warnings():
            warnings.showwarning = one_line_warnings(warnings.showwarning)
            return args.handler(args)
    except TuneAppError as err:
        if args.debug:
            traceback.print_exc()
        # Several problems: one `error:` line each (a diff or other multi-line text stays whole),
        # what a terminal would act on shown escaped, whatever the error's kind.
        lines = str(err).splitlines() if isinstance(err, SpecErrors) else [str(err)]
        for line in lines:
            print(f"error: {printable(line)}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as stop:
        print(interrupted_line(stop), file=sys.stderr)
        return interrupts.exit_code()
    except Exception as err:  # a bug or an environment failure, not the user's input
        if args.debug:
            traceback.print_exc()
        print(
            f"error: {type(err).__name__}: {printable(str(err))} (rerun with --debug for the "
            "traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
