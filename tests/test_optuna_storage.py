"""Where an Optuna search keeps its study (`methods.searchers.study_storage`): a journal file in
the run folder (an append-only log: a trial's ask and tell in about 1.5 ms, where SQLite's
commits took 21), the optuna.db of a run begun before it for that run's resume, and a journal
a killed driver left half-written cut back to its last whole line. Pure, Ray-free."""

from __future__ import annotations

import pytest

from tune_app.methods import Context, OptunaOptions, searcher_of
from tune_app.methods.searchers import study_storage
from tune_app.rundir.location import RunLocation
from tune_app.space import Domain, to_tune

optuna = pytest.importorskip("optuna")

SPACE = to_tune({"x": Domain("uniform", (0, 10))})


def _trials(folder: RunLocation, n: int) -> None:
    """`n` trials suggested and told through the app's searcher, as a run (or its resume)."""
    searcher = searcher_of(OptunaOptions()).build(OptunaOptions(), Context(seed=0, folder=folder))
    assert searcher.set_search_properties("score", "max", SPACE)
    for i in range(n):
        trial_id = f"t_{i:05d}_{len(list(folder.local.iterdir()))}"
        config = searcher.suggest(trial_id)
        searcher.on_trial_complete(trial_id, {"score": config["x"], "training_iteration": 1})


def _study(folder: RunLocation):
    return optuna.load_study(study_name=folder.local.name, storage=study_storage(folder))


def test_a_search_keeps_its_study_in_a_journal_and_a_resume_goes_on_with_it(tmp_path):
    folder = RunLocation(tmp_path / "e")
    folder.local.mkdir()
    _trials(folder, 3)
    assert folder.optuna_journal.exists() and not folder.optuna_db.exists()
    _trials(folder, 2)  # a resume builds the searcher again, on the same study
    values = [t.value for t in _study(folder).trials]
    assert len(values) == 5 and None not in values


def test_a_run_begun_with_an_sqlite_study_goes_on_with_it(tmp_path):
    folder = RunLocation(tmp_path / "e")
    folder.local.mkdir()
    old = optuna.create_study(study_name="e", storage=f"sqlite:///{folder.optuna_db}")
    old.add_trial(
        optuna.trial.create_trial(
            params={"x": 4.0},
            distributions={"x": optuna.distributions.FloatDistribution(0, 10)},
            value=4.0,
        )
    )
    _trials(folder, 2)
    assert not folder.optuna_journal.exists()
    assert len(_study(folder).trials) == 3


def test_a_journal_line_left_half_written_is_cut_before_the_study_goes_on(tmp_path):
    """Appended to a torn line, the next record would be lost with it, and Optuna's reader
    then stops at the broken line: every later trial gone from the study."""
    folder = RunLocation(tmp_path / "e")
    folder.local.mkdir()
    _trials(folder, 2)
    with folder.optuna_journal.open("ab") as journal:
        journal.write(b'{"op_code": 4, "worker_id": "killed mid-wr')
    _trials(folder, 2)
    assert [t.state.name for t in _study(folder).trials] == ["COMPLETE"] * 4
    assert folder.optuna_journal.read_bytes().endswith(b"}\n")
