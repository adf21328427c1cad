"""`tune_app doctor`: the installed Ray, the checked range, and each private Ray symbol the app
relies on, checked without starting Ray."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from tune_app.ray_internals import TESTED_RAY_VERSION, symbols, versions


def test_on_the_pinned_ray_every_symbol_holds_and_doctor_exits_0(cli):
    import ray

    was_running = ray.is_initialized()  # an earlier test in this process may have started it
    result = cli("doctor")
    assert result.code == 0, result.out
    assert f"Ray {TESTED_RAY_VERSION}: inside the releases" in result.out
    n = len(symbols.SYMBOLS)
    assert f"{n} of {n} hold" in result.out
    assert ray.is_initialized() == was_running  # checked without starting Ray


def test_a_symbol_gone_from_ray_is_named_and_doctor_exits_1(cli, monkeypatch):
    storage = importlib.import_module("ray.train._internal.storage")
    monkeypatch.delattr(storage, "_upload_to_fs_path")
    result = cli("doctor")
    assert result.code == 1, result.out
    [line] = [x for x in result.out.splitlines() if x.startswith("broken:")]
    assert "ray.train._internal.storage:_upload_to_fs_path" in line
    assert "has no _upload_to_fs_path" in line and "ray_internals.uploads" in line
    n = len(symbols.SYMBOLS)
    assert f"{n - 1} of {n} hold" in result.out


def test_a_changed_signature_is_named_with_both_parameter_lists(cli, monkeypatch):
    from ray.tune.schedulers import HyperBandScheduler

    def _create_bracket(self, s, extra):  # a first parameter renamed upstream: s -> size
        raise AssertionError("never called")

    _create_bracket.__code__ = _create_bracket.__code__.replace(co_varnames=("self", "size", "x"))
    monkeypatch.setattr(HyperBandScheduler, "_create_bracket", _create_bracket)
    result = cli("doctor")
    assert result.code == 1, result.out
    [line] = [x for x in result.out.splitlines() if x.startswith("broken:")]
    assert "HyperBandScheduler._create_bracket" in line
    assert "(self, size, x)" in line and "begin (self, s)" in line


def test_a_keyword_the_app_passes_gone_from_a_signature_is_named(cli, monkeypatch):
    from ray._private import parameter

    def RayParams(self, external_addresses=None, include_log_monitor=None):  # no_monitor gone
        raise AssertionError("never called")

    monkeypatch.setattr(parameter, "RayParams", RayParams)
    result = cli("doctor")
    assert result.code == 1, result.out
    [line] = [x for x in result.out.splitlines() if x.startswith("broken:")]
    assert "ray._private.parameter:RayParams: takes no no_monitor" in line


def test_a_ray_outside_the_range_is_said_so_and_its_symbols_still_checked(cli, monkeypatch):
    monkeypatch.setattr(versions, "installed", lambda: "2.61.0")
    result = cli("doctor")
    assert result.code == 0, result.out
    assert "Ray 2.61.0: OUTSIDE the releases tune_app is checked on (2.55 to 2.60)" in result.out


def test_without_ray_doctor_says_how_to_install_it_and_exits_1(cli, monkeypatch):
    monkeypatch.setattr(versions, "installed", lambda: None)
    result = cli("doctor")
    assert result.code == 1
    assert "Ray: not installed" in result.out and "pip install" in result.out


def test_the_tracker_symbols_hold_without_the_trackers_installed():
    """In a fresh process (a module imported here once stays imported)."""
    import subprocess

    code = (
        "import sys; sys.modules['mlflow'] = sys.modules['wandb'] = None\n"
        "from tune_app.ray_internals import symbols\n"
        "print([why for _, why in symbols.broken()])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_every_symbol_names_a_module_of_ray_internals_that_uses_it():
    folder = Path(symbols.__file__).parent
    for symbol in symbols.SYMBOLS:
        for module in symbol.used_by.split(", "):
            source = (folder / f"{module}.py").read_text()
            name = symbol.where.partition(":")[2].split(".")[-1]
            assert name in source, f"{symbol.where}: not in ray_internals/{module}.py"
