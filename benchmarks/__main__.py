"""Run the benchmarks: `python -m benchmarks [--quick] [NAME ...]`; prints a table of ratios and
writes them as JSON (benchmarks/results.json unless --json says otherwise)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from benchmarks.common import Figure, machine, table, write_json

NAMES = (
    "overhead",
    "nested",
    "search",
    "search_rl",
    "warm_start",
    "throughput",
    "startup",
    "scale",
    "full_rate",
    "layout",
    "big_results",
    "gpu",
)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(NAMES)}")
    parser.add_argument("--quick", action="store_true", help="small sizes: all under 10 minutes")
    parser.add_argument(
        "--json", type=Path, default=Path(__file__).with_name("results.json"), help="where to write"
    )
    parser.add_argument("--data", help="folder of the LCBench surrogate (search, warm_start)")
    args = parser.parse_args()
    if args.data:
        os.environ["LCBENCH_DATA"] = args.data
    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; choose from {', '.join(NAMES)}")
    figures: list[Figure] = []
    failed = []
    for name in args.names or NAMES:
        began = time.monotonic()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(f"benchmarks.{name}")
        try:
            figures += module.run(quick=args.quick)
        except Exception as err:  # one broken benchmark must not lose the others' figures
            failed.append(name)
            print(f"  {name} failed: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
        print(f"  {name}: {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
        write_json(args.json, figures, args.quick)  # what is measured so far
    about = machine()
    print(f"{about['cpus']} cores, {about['processor']}, Python {about['python']}")
    print(table(figures))
    write_json(args.json, figures, args.quick)
    if failed:
        print(f"failed to run: {', '.join(failed)}", file=sys.stderr)
    return 0 if not failed and all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
