"""Where an Optuna search keeps its study (`methods.searchers.study_storage`): a journal file in
the run folder (an append-only log, where SQLite's commits took 21 ms a trial), the optuna.db
of a run begun before it for that run's resume, and a journal a killed driver left
half-written cut back to its last whole line. Pure, Ray-free."""

from __future__ import annotations

import itertools
import pickle

import pytest

optuna = pytest.importorskip("optuna")

from tune_app.methods import Context, OptunaOptions, searcher_of  # noqa: E402
from tune_app.methods.optuna_study import LOCK_SUFFIX, study_storage  # noqa: E402
from tune_app.rundir.location import RunLocation  # noqa: E402
from tune_app.rundir.storage import APP_FILES  # noqa: E402
from tune_app.space import Domain, to_tune  # noqa: E402

SPACE = to_tune({"x": Domain("uniform", (0, 10))})
_IDS = itertools.count()  # Tune's trial ids: never the same twice


def _trials(folder: RunLocation, n: int, searcher=None):
    """`n` trials suggested and told through the app's searcher (built for a run, or given: a
    resumed one); the searcher."""
    if searcher is None:
        options = OptunaOptions()
        searcher = searcher_of(options).build(options, Context(seed=0, folder=folder))
        assert searcher.set_search_properties("score", "max", SPACE)
    for _ in range(n):
        trial_id = f"t_{next(_IDS):05d}"
        config = searcher.suggest(trial_id)
        searcher.on_trial_complete(trial_id, {"score": config["x"], "training_iteration": 1})
    return searcher


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


def test_the_journal_is_appended_with_no_lock_file_and_no_fsync(tmp_path, monkeypatch):
    """Optuna's backend took a lock file and an fsync for each of a trial's five appends: 5 ms
    of each trial in the driver, which held a 10,000-trial TPE search below a hand-written
    Tuner's rate. The run folder has one writer, and a killed process loses nothing it wrote."""
    import os

    folder = RunLocation(tmp_path / "e")
    folder.local.mkdir()
    made = []
    real_open = os.open
    monkeypatch.setattr(os, "fsync", lambda fd: made.append("fsync"))
    monkeypatch.setattr(
        os, "open", lambda path, *a, **k: made.append(str(path)) or real_open(path, *a, **k)
    )
    _trials(folder, 3)
    lock = str(folder.optuna_journal) + LOCK_SUFFIX
    assert "fsync" not in made and lock not in made
    monkeypatch.undo()
    values = [t.value for t in _study(folder).trials]  # read back whole, by Optuna's reader
    assert len(values) == 3 and None not in values


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


def test_a_resume_goes_on_with_the_study_its_saved_searcher_held_after_a_kill(tmp_path):
    """Tune saves its searcher pickled, study storage and all, and a resume unpickles it; the
    driver was killed mid-write, leaving a torn line and Optuna's lock file. The searcher
    unpickled reads the study afresh (trials told after it was saved included), cuts the torn
    line, takes no lock as held, and goes on."""
    folder = RunLocation(tmp_path / "e")
    folder.local.mkdir()
    saved = pickle.dumps(_trials(folder, 2))  # Tune's saved state, as a checkpoint takes it
    _trials(folder, 1)  # told after that save
    with folder.optuna_journal.open("ab") as journal:
        journal.write(b'{"op_code": 4, "worker_id": "killed mid-wr')
    lock = folder.optuna_journal.with_name(folder.optuna_journal.name + LOCK_SUFFIX)
    lock.write_text("a killed driver's")
    resumed = pickle.loads(saved)
    _trials(folder, 2, resumed)
    assert [t.state.name for t in _study(folder).trials] == ["COMPLETE"] * 5
    assert not lock.exists()


def test_a_cloud_run_uploads_its_study_with_the_other_files_of_the_app(tmp_path):
    """A cloud run's resume pulls the app's files into a fresh staging folder: a study left
    out of them was lost (SQLite) or read at byte offsets of another file (the journal)."""
    folder = RunLocation(tmp_path)
    assert {folder.optuna_journal.name, folder.optuna_db.name} <= set(APP_FILES)
