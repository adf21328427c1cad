"""Wording every printed line shares: a count with its noun, singular for one."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """`1 iteration`, `2 iterations`, `0 trials` (the nouns printed take an `s`)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
