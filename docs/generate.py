"""Writes the docs pages made from the code: the reference (spec keys, searchers and schedulers,
search-space mappings, RLlib legacy keys, commands), the troubleshooting page and README's
example output. A test fails when a committed page differs from what this writes.

    python docs/generate.py            # write the pages
    python docs/generate.py --check    # exit 1 naming the pages that differ
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the checkout's tune_app, not an installed one
    sys.path.insert(0, str(ROOT))

from docs.gen import (  # noqa: E402
    cli_ref,
    methods_ref,
    readme,
    rllib_ref,
    space_ref,
    spec_ref,
    troubleshooting,  # noqa: E402
)

# Page (relative to the checkout) -> the function returning its text.
PAGES = {
    "docs/reference/spec.md": spec_ref.page,
    "docs/reference/methods.md": methods_ref.page,
    "docs/reference/space.md": space_ref.page,
    "docs/reference/rllib.md": rllib_ref.page,
    "docs/reference/cli.md": cli_ref.page,
    "docs/troubleshooting.md": troubleshooting.page,
}


def expected() -> dict[Path, str]:
    """Every generated file and the text it should hold (pages with generated parts included)."""
    found = {ROOT / name: make() for name, make in PAGES.items()}
    for name in readme.PAGES:
        found[ROOT / name] = readme.filled((ROOT / name).read_text())
    return found


def stale() -> list[Path]:
    """The generated files whose committed text differs from the generator's."""
    return [
        path for path, text in expected().items() if not path.exists() or path.read_text() != text
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    args = parser.parse_args()
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(ROOT)} (run python docs/generate.py)")
        return 1 if old else 0
    for path, text in expected().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
