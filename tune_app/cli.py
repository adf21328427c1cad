"""The command line: parse, call one function, map errors to exit codes.

Exit codes: 0 done, 1 a trial failed, 2 bad spec or usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tune_app.analyze import FORMATS
from tune_app.errors import SpecErrors, TuneAppError

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130  # bad input exits with its error's code, 2


def cmd_validate(args: argparse.Namespace) -> int:
    from tune_app.console import plan_text
    from tune_app.plan import make_plan
    from tune_app.spec.resolve import load

    loaded = load(args.spec)
    plan = make_plan(loaded, storage_path=args.storage_path, smoke=args.smoke)
    _print_warnings([*plan.warnings, *_earlier_runs(plan)])
    print(plan_text(plan))
    return EXIT_OK


def _earlier_runs(plan: Any) -> list[str]:
    """Warnings for results folders that already hold a run, which `run` would refuse."""
    out = []
    for ep in plan.experiments:
        folder = ep.folder.local
        if ep.folder.uri is None and ep.folder.holds_files():
            out.append(
                f"{ep.experiment.key_path}.storage_path: {folder} already holds a run: `run` "
                f"will refuse it; continue it with tune_app resume {folder}, or pass "
                "--storage-path"
            )
    return out


def cmd_run(args: argparse.Namespace) -> int:
    from tune_app.plan import make_plan
    from tune_app.spec.resolve import load

    loaded = load(args.spec)
    if not args.quiet:  # at once: planning imports the trainables, which may import Ray
        from tune_app.console import start_line

        print(start_line(loaded, args.storage_path, args.smoke), flush=True)
    plan = make_plan(
        loaded,
        cpus=_cluster_cpus(args),
        storage_path=args.storage_path,
        smoke=args.smoke,
        rllib_checks=True,
    )
    _print_warnings(plan.warnings)

    from tune_app import runner

    verbosity = 0 if args.quiet else 2 if args.verbose else 1
    opts = runner.RunOptions(address=args.address, verbosity=verbosity, command=tuple(args.argv))
    return _finish(plan, _run_or_interrupt(plan, opts), args)


def _run_or_interrupt(plan: Any, opts: Any) -> list[Any]:
    """Run the plan; on Ctrl-C while experiments run concurrently (no summaries come back),
    say how to resume every experiment that started, as a single experiment's summary does."""
    from tune_app import runner

    try:
        return runner.run(plan, opts)
    except KeyboardInterrupt:
        started = [ep.location for ep in plan.experiments if ep.folder.started]
        if started:
            print(
                f"interrupted; the state is saved. Continue with: {_resume_command(started)}",
                file=sys.stderr,
            )
        raise


def _resume_command(locations: Sequence[str]) -> str:
    """`resume` takes one folder: an experiment's, or the storage folder holding several."""
    from tune_app.rundir.location import parent_of

    parents = {parent_of(loc) for loc in locations}
    if len(locations) == 1:
        return f"tune_app resume {locations[0]}"
    if len(parents) == 1:
        return f"tune_app resume {parents.pop()}"
    return " && ".join(f"tune_app resume {loc}" for loc in locations)


def _cluster_cpus(args: argparse.Namespace) -> float | None:
    """On a cluster, trial sizes are checked against the cluster once joined, not this machine.
    (The runner's cluster_address rule, read here without importing Ray: a bad spec never does.)"""
    return math.inf if args.address or os.environ.get("RAY_ADDRESS") else None


def cmd_resume(args: argparse.Namespace) -> int:
    from tune_app.resume import resume_plan

    if not args.quiet:  # at once: planning imports the trainables, which may import Ray
        print(f"tune_app: resuming {args.dir}", flush=True)
    plan = resume_plan(args.dir, force=args.force, cpus=_cluster_cpus(args))
    from tune_app.methods import scheduler_of

    notes = [
        f"{ep.experiment.key_path}.scheduler: {note}"
        for ep in plan.experiments
        if (note := scheduler_of(ep.experiment.scheduler).resume_note)
    ]
    _print_warnings([*plan.warnings, *notes])

    from tune_app import runner

    verbosity = 0 if args.quiet else 2 if args.verbose else 1
    opts = runner.RunOptions(
        address=args.address, verbosity=verbosity, command=tuple(args.argv), resume=True
    )
    return _finish(plan, _run_or_interrupt(plan, opts), args)


def _finish(plan: Any, summaries: list[Any], args: argparse.Namespace) -> int:
    """Expectations, the JUnit report, the summary table and the exit code of a run."""
    from tune_app import expect
    from tune_app.console import print_outcomes, print_summaries
    from tune_app.rundir.outcome import missing_keys_error

    outcomes = [
        o
        for ep, summary in zip(plan.experiments, summaries, strict=True)
        for o in expect.check(ep, summary, smoke=plan.smoke)
    ]
    if args.junit:
        expect.write_junit(Path(args.junit), plan, summaries, outcomes)
    print_summaries(plan, summaries)
    print_outcomes(outcomes)
    for ep, summary in zip(plan.experiments, summaries, strict=True):
        if summary.missing and not summary.interrupted:  # stopped early, keys may yet come
            raise missing_keys_error(ep, summary).with_file(str(plan.spec.file))
    stopped = [ep for ep, s in zip(plan.experiments, summaries, strict=True) if s.interrupted]
    if stopped:
        command = _resume_command([ep.location for ep in stopped])
        print(f"interrupted; the state is saved. Continue with: {command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if all(o.passed for o in outcomes) else EXIT_FAILED


def cmd_list(args: argparse.Namespace) -> int:
    from tune_app import console
    from tune_app.registry import registered
    from tune_app.rllib.tables import ALGORITHMS

    table = registered()
    if args.name is None:
        print(console.trainables_text(table.values()))
        print()
        print(console.algorithms_text(ALGORITHMS))
    elif args.name in table:
        print(console.trainables_text([table[args.name]]))
    elif args.name in ALGORITHMS:
        print(console.algorithm_keys_text(args.name))
    else:
        from tune_app.errors import TuneAppError, did_you_mean

        names = [*table, *ALGORITHMS]
        hint = did_you_mean(args.name, names)
        raise TuneAppError(
            f"no trainable or RLlib algorithm named '{args.name}'; allowed: {', '.join(names)}"
            + (f"; {hint}" if hint else "")
        )
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace) -> int:
    from tune_app import analyze
    from tune_app.rundir import read as results

    if args.top is not None and args.top < 1:
        raise TuneAppError(f"--top must be at least 1, got {args.top}")
    print(analyze.render(results.load(args.dir), args.format, args.top))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from tune_app import report
    from tune_app.rundir import read as results
    from tune_app.rundir.storage import is_uri

    experiments = results.load(args.dir)
    # Beside the results, or here when they are on cloud storage.
    out = Path(args.out or ("." if is_uri(args.dir) else args.dir))
    if out.is_dir():
        out /= "report.html"
    print(report.write(experiments, out, source=str(args.dir)))
    return EXIT_OK


def cmd_best(args: argparse.Namespace) -> int:
    from tune_app import best

    if args.seeds is not None and args.seeds < 1:
        raise TuneAppError(f"--seeds must be at least 1, got {args.seeds}")
    data, found = best.best_spec(args.dir, seeds=args.seeds)
    print(best.render(data, found, args.format, source=str(args.dir)))
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    from tune_app import best
    from tune_app.api import run
    from tune_app.console import evaluation_text, print_outcomes

    if args.top < 1 or args.seeds < 1:
        raise TuneAppError(f"--top and --seeds must be at least 1, got {args.top}, {args.seeds}")
    data, found = best.best_spec(args.dir, seeds=args.seeds, top=args.top)
    spec_file, root = best.evaluation_home(args.dir)
    text = best.render(data, found, "yaml", source=str(args.dir))
    spec_file.write_text(text + "\n", encoding="utf-8")
    print(f"tune_app: the top {args.top} configurations on {args.seeds} fresh seeds: {spec_file}")
    verbosity = 0 if args.quiet else 1
    result = run(spec_file, storage_path=args.storage_path or root, verbosity=verbosity)
    print(evaluation_text(found, result.summaries))
    print_outcomes(result.outcomes)  # the spec's expect holds for each configuration too
    return result.exit_code


def cmd_schema(args: argparse.Namespace) -> int:
    from tune_app.spec.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def cmd_tensorboard(args: argparse.Namespace) -> int:
    from tune_app.tensorboard import serve

    serve(Path(args.dir), host=args.host, port=args.port)  # until Ctrl-C
    return EXIT_OK


def _print_warnings(warnings: Sequence[str]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def _versions() -> str:
    """`tune_app 0.1.0 (Ray 2.60.0)`, read from the installed packages' metadata (no import)."""
    from importlib.metadata import PackageNotFoundError, version

    def of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return f"tune_app {of('tune_app')} (Ray {of('ray')})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tune_app",
        description="Hyperparameter searches on Ray Tune and RLlib from a YAML spec.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.add_argument(
        "--version", action="version", version=_versions(), help="the app's and Ray's versions"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], int], help: str):
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(handler=handler)
        p.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks of errors",
        )
        return p

    p = command("run", cmd_run, "run the searches of a spec file")
    p.add_argument("spec", help="the YAML spec file")
    p.add_argument(
        "--address",
        help="join the Ray cluster at ADDR (default: RAY_ADDRESS, or start a local Ray)",
    )
    p.add_argument("--storage-path", help="write results here instead of the spec's storage_path")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a tiny run of every experiment: 2 samples, 2 grid values, 2 iterations",
    )
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report of trials and expect")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="Tune's full progress tables")
    loud.add_argument("-q", "--quiet", action="store_true", help="print only the final summary")

    p = command("resume", cmd_resume, "continue an interrupted run from its folder")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument("--force", action="store_true", help="resume even if the spec file changed")
    p.add_argument("--address", help="as for run")
    p.add_argument("--junit", metavar="FILE", help="as for run")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="as for run")
    loud.add_argument("-q", "--quiet", action="store_true", help="as for run")

    p = command("validate", cmd_validate, "check a spec file and print its plan, without Ray")
    p.add_argument("spec", help="the YAML spec file")
    p.add_argument("--storage-path", help="as for run")
    p.add_argument("--smoke", action="store_true", help="the plan of the --smoke run")

    p = command("analyze", cmd_analyze, "the trials of a run, from its files (no Ray needed)")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument("--format", choices=FORMATS, default="table", help="default: table")
    p.add_argument("--top", type=int, metavar="N", help="only the N best trials of each experiment")

    p = command("best", cmd_best, "the best configuration of a run as a ready spec (no Ray)")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument(
        "--format",
        choices=("yaml", "json", "overrides"),
        default="yaml",
        help="a spec file (default), its JSON, or experiment.config.path=value lines",
    )
    p.add_argument(
        "--seeds",
        type=int,
        metavar="N",
        help="run the best configuration on N evaluation seeds (config.seed), apart from tuning's",
    )

    p = command("evaluate", cmd_evaluate, "re-run a run's top configurations on fresh seeds (Ray)")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument("--top", type=int, default=3, metavar="K", help="configurations (default 3)")
    p.add_argument("--seeds", type=int, default=5, metavar="N", help="fresh seeds (default 5)")
    p.add_argument("--storage-path", help="results folder (default: beside the run's)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the evaluation")

    p = command("report", cmd_report, "an offline HTML page of a run's plots and trials (no Ray)")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument("--out", metavar="FILE", help="the page to write (default: DIR/report.html)")

    p = command("tensorboard", cmd_tensorboard, "serve TensorBoard on a run: scalars and HParams")
    p.add_argument("dir", help="an experiment folder, or the storage folder holding several")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port to bind (default: 0, a free one)")

    p = command("list", cmd_list, "list the trainables and RLlib algorithms with their knobs")
    p.add_argument("name", nargs="?", help="one trainable, or every config key of an algorithm")
    command("schema", cmd_schema, "print the JSON Schema of spec files")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.handler(args)
    except TuneAppError as err:
        if args.debug:
            traceback.print_exc()
        # Several problems: one `error:` line each (a diff or other multi-line text stays whole).
        lines = str(err).splitlines() if isinstance(err, SpecErrors) else [str(err)]
        for line in lines:
            print(f"error: {line}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`tune_app analyze ... | head`): what it took was all it wanted.
        # Python would complain again flushing stdout at exit, so stdout goes to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:  # a bug or an environment failure, not the user's input
        if args.debug:
            traceback.print_exc()
        print(
            f"error: {type(err).__name__}: {err} (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
