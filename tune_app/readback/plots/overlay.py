"""Several runs' best-so-far staircases overlaid, one figure per axis (trials ended, iterations
spent, wall time), for `tune_app compare`'s page: one colour per run, the same in each."""

from __future__ import annotations

from matplotlib import colormaps
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tune_app.readback.comparing import AXES, AXIS_WORDS, Comparison
from tune_app.readback.plots import new_figure, tex_safe


def run_colors(c: Comparison) -> dict[str, str]:
    """Run label -> its hex colour (tab10, then viridis beyond ten runs)."""
    n = len(c.runs)
    if n <= 10:
        return {r.label: to_hex(colormaps["tab10"](i)) for i, r in enumerate(c.runs)}
    return {r.label: to_hex(colormaps["viridis"](i / (n - 1))) for i, r in enumerate(c.runs)}


def staircases(c: Comparison) -> dict[str, Figure]:
    """Axis -> the runs' staircases against it, each ending in a dot at the run's end; an axis
    a run's rows cannot place (no logged time) is left out."""
    colors = run_colors(c)
    out = {}
    for axis in AXES:
        if not any(r.curve for r in c.runs) or any(
            s.at(axis) is None for r in c.runs for s in r.curve
        ):
            continue
        fig, ax = new_figure(3.2)
        for r in c.runs:
            if not r.curve:
                continue
            xs = [s.at(axis) or 0.0 for s in r.curve]
            ys = [s.best for s in r.curve]
            ax.step(xs, ys, where="post", color=colors[r.label], lw=2.0, label=tex_safe(r.label))
            ax.plot(xs[-1:], ys[-1:], "o", color=colors[r.label], ms=5)
        if axis == "trials" and max(len(r.curve) for r in c.runs) > 50:
            ax.set_xscale("log")
        else:
            ax.set_xlim(left=0)
        if axis != "seconds":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(AXIS_WORDS[axis])
        ax.set_ylabel(f"best {tex_safe(c.metric)} so far ({c.mode})")
        ax.legend(loc="best", fontsize=8)
        out[axis] = fig
    return out
