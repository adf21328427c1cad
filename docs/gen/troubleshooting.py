"""docs/troubleshooting.md."""

from __future__ import annotations


def page() -> str:
    return "# Troubleshooting\n"
