"""The benchmarks' own arithmetic (Ray-free): targets met or not, the table, the search cost."""

from __future__ import annotations

from benchmarks.common import Figure, table
from benchmarks.search import _cost_until


def test_targets_are_read_both_ways():
    low = Figure("b", "f", 1.1, "<= 1.15", "a", "b")
    high = Figure("b", "f", 0.7, ">= 0.8", "a", "b")
    assert low.met is True and high.met is False
    assert Figure("b", "f", 3.0, "", "a", "b").met is None
    text = table([low, high])
    assert "| b | f | 1.1 | <= 1.15 | yes |" in text and "| **no** |" in text


def test_search_cost_counts_trial_seconds_until_the_goal():
    rows = [  # two trials side by side; the second reaches the goal on its second result
        {"logged_at": 11.0, "time_this_iter_s": 1.0, "episode_return_mean": 20.0},
        {"logged_at": 11.5, "time_this_iter_s": 1.5, "episode_return_mean": 30.0},
        {"logged_at": 12.0, "time_this_iter_s": 1.0, "episode_return_mean": 25.0},
        {"logged_at": 13.0, "time_this_iter_s": 1.5, "episode_return_mean": 99.0},
        {"logged_at": 14.0, "time_this_iter_s": 1.0, "episode_return_mean": 40.0},
    ]
    spent, wall, total = _cost_until(rows, 98.0)
    assert (spent, wall, total) == (5.0, 3.0, 6.0)
    assert _cost_until(rows, 100.0)[:2] == (None, None)
