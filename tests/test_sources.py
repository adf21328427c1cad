"""What a run records of the code it ran (`tune_app.sources`), and what `resume` says of it:
a user module edited since the run began is named; a run whose saved state another version of
the app wrote, and this one cannot read, is refused in one line."""

from __future__ import annotations

import json

import pytest

from tests.conftest import user_module
from tune_app import spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.resuming import _code_changes
from tune_app.rundir.write import Invocation, read_run_record, write_run_files


def _plan(write_spec, tmp_path, text):
    return make_plan(spec.load(write_spec(text)), cpus=2, storage_path=str(tmp_path / "o"))


def test_a_run_records_its_user_modules_and_resume_names_the_changed_one(write_spec, tmp_path):
    module = user_module("quadratic.py", tmp_path)
    plan = _plan(write_spec, tmp_path, "e:\n  run: quadratic:train\n")
    (ep,) = plan.experiments
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run"], plan.spec.file))
    record = read_run_record(ep.folder)
    assert list(record.sources) == [str(module.resolve())] and len(record.app_code) == 16
    assert _code_changes([record]) == []
    module.write_text(module.read_text() + "\n# tuned the loss\n")
    (warning,) = _code_changes([record])
    assert warning.startswith(f"e: {module.resolve()} changed since the run began")


def test_rllib_config_code_is_recorded_as_the_trainables_is(write_spec, tmp_path):
    module = user_module("rllib_code.py", tmp_path)
    plan = _plan(
        write_spec,
        tmp_path,
        "e:\n  run: PPO\n  env: CartPole-v1\n  config: {callbacks: 'rllib_code:MarkResults'}\n",
    )
    (ep,) = plan.experiments
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run"], plan.spec.file))
    assert list(read_run_record(ep.folder).sources) == [str(module.resolve())]


@pytest.mark.parametrize("same_app", [False, True])
def test_a_state_another_app_version_wrote_is_refused_in_one_line(
    write_spec, tmp_path, monkeypatch, same_app
):
    from ray import tune

    from tune_app.runner.experiment import _restore
    from tune_app.sources import app_fingerprint

    user_module("quadratic.py", tmp_path)
    plan = _plan(write_spec, tmp_path, "e:\n  run: quadratic:train\n")
    (ep,) = plan.experiments
    ep.folder.create()
    write_run_files(ep, plan, Invocation.here(["run"], plan.spec.file))
    record = json.loads(ep.folder.record.read_text())
    record["app_code"] = app_fingerprint() if same_app else "0123456789abcdef"
    ep.folder.record.write_text(json.dumps(record))

    def unreadable(*args, **kwargs):
        raise AttributeError("Can't get attribute '_summary_writer' on <module 'tune_app'>")

    monkeypatch.setattr(tune.Tuner, "restore", unreadable)
    if same_app:  # not a version change: the error is Tune's to show
        with pytest.raises(AttributeError):
            _restore(ep, None, {})
        return
    with pytest.raises(SpecError) as refused:
        _restore(ep, None, {})
    message = str(refused.value)
    assert "run by another version of tune_app (code 0123456789abcdef" in message
    assert "_summary_writer" in message and "\n" not in message
