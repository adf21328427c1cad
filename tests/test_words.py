"""Counts in printed lines: one helper (`words.counted`), singular for one ("done after 1
iterations" and "(1 trials)" were printed)."""

from __future__ import annotations

import pytest

from tune_app.rundir.rungs import RungCheck, check_text
from tune_app.words import counted


@pytest.mark.parametrize(
    "count, noun, text",
    [
        pytest.param(1, "iteration", "1 iteration", id="one"),
        pytest.param(2, "iteration", "2 iterations", id="two"),
        pytest.param(0, "trial", "0 trials", id="none"),
        pytest.param(1, "other trial", "1 other trial", id="phrase"),
    ],
)
def test_a_count_takes_its_noun_singular_for_one_only(count, noun, text):
    assert counted(count, noun) == text


def test_the_rung_checks_say_one_trial():
    text = check_text([RungCheck(2, 1, None), RungCheck(4, 3, 0.5)])
    assert "iteration 2: - (1 trial), iteration 4: 0.50 (3 trials)" in text


def test_no_module_keeps_a_plural_helper_of_its_own():
    """Each module had its own (`progress.counted`, `console._count`, `plots.plural_s`)."""
    import re

    from .conftest import ROOT

    own = re.compile(r"^def \w*(plural|counted|_count)\w*\(", re.MULTILINE)
    found = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tune_app").rglob("*.py")
        if p.name != "words.py" and own.search(p.read_text())
    ]
    assert not found, found
