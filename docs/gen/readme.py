"""README's generated part: the output of the example command it shows."""

from __future__ import annotations


def filled(text: str) -> str:
    return text
