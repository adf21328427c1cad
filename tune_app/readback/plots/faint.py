"""The trials not highlighted in a figure, drawn faint and in bulk: one LineCollection per line
style, at most MAX_FAINT_LINES of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

from tune_app.words import counted

FAINT_COLOR = "#a9b2be"
MAX_FAINT_LINES = 2000  # beyond that many faint trials, this many are drawn (`FaintLines`)
End = tuple[str, tuple[float, float]]  # a line's end mark: its marker ("X", "v"), and where


class FaintLines:
    """The trials not highlighted, drawn as one LineCollection per line style (a failed trial's
    dashed), not one artist per trial: a figure of 10,000 trials drew for minutes. Beyond
    MAX_FAINT_LINES, that many are drawn, evenly spaced in the order added (the callers add by
    rank), so a live page of a 10,000-trial run renders in seconds: past a few thousand thin
    grey lines the band they fill looks the same."""

    def __init__(self) -> None:
        self._lines: list[tuple[list[tuple[float, float]], str, bool, End | None]] = []

    def add(
        self, points: list[tuple[float, float]], color: str, failed: bool, end: End | None = None
    ) -> None:
        """A trial's line; `end`: the mark at its end (failed, or stopped early), drawn where
        the line is."""
        self._lines.append((points, color, failed, end))

    def __len__(self) -> int:
        return len(self._lines)

    def draw(self, ax: Any, linewidth: float, alpha: float, zorder: int) -> list[End]:
        """Add the collections to `ax`; the end marks of the lines drawn."""
        styles: dict[str, tuple[list[list[tuple[float, float]]], list[str]]] = {}
        ends = []
        for points, color, failed, end in evenly(self._lines, MAX_FAINT_LINES):
            lines, colors = styles.setdefault("--" if failed else "-", ([], []))
            lines.append(points)
            colors.append(color)
            if end is not None:
                ends.append(end)
        for style, (lines, colors) in styles.items():
            ax.add_collection(
                LineCollection(
                    lines,
                    colors=colors,
                    linewidths=linewidth,
                    alpha=alpha,
                    linestyles=style,
                    zorder=zorder,
                )
            )
        return ends

    def legend(self, linewidth: float) -> list[Line2D]:
        """The legend's entry for the faint trials ([] for none): how many, and how many drawn
        where not all are."""
        if not self._lines:
            return []
        label = counted(len(self._lines), "other trial")
        if len(self._lines) > MAX_FAINT_LINES:
            label += f" ({MAX_FAINT_LINES:,} drawn, spread over their ranks)"
        return [Line2D([], [], color=FAINT_COLOR, lw=linewidth, label=label)]


def evenly(items: Sequence[Any], at_most: int) -> Sequence[Any]:
    """`items` whole up to `at_most`, else `at_most` of them spaced evenly, the first and the
    last among them."""
    n = len(items)
    if n <= at_most:
        return items
    if at_most <= 1:
        return list(items[:at_most])
    return [items[round(i * (n - 1) / (at_most - 1))] for i in range(at_most)]
