"""`ray_internals.replacing`: what a patch replaces is back as it was after, however it ended."""

from __future__ import annotations

import contextlib
import os
import types

import pytest

from tune_app.ray_internals.replacing import environment, replaced


class Base:
    def step(self) -> str:
        return "base"

    @staticmethod
    def made() -> str:
        return "static"


class Child(Base):
    pass


def _swapped_and_back(owner, name, value, fail: bool):
    before = vars(owner).get(name, "absent")
    with pytest.raises(RuntimeError) if fail else contextlib.nullcontext():
        with replaced(owner, name, value) as was:
            assert getattr(owner, name) is value
            if fail:
                raise RuntimeError("the block failed")
    assert vars(owner).get(name, "absent") is before
    return was


@pytest.mark.parametrize("fail", [False, True], ids=["ended", "raised"])
def test_a_module_attribute_is_back_and_the_block_was_handed_the_old_value(fail):
    module = types.ModuleType("m")
    module.setting = 3
    assert _swapped_and_back(module, "setting", 4, fail) == 3
    assert module.setting == 3


@pytest.mark.parametrize("fail", [False, True], ids=["ended", "raised"])
def test_a_class_keeps_its_own_entry_a_static_method_included(fail):
    was = _swapped_and_back(Base, "made", lambda: "patched", fail)
    assert was() == "static" and Base().made() == "static"  # still a static method
    assert isinstance(vars(Base)["made"], staticmethod)


def test_an_inherited_attribute_is_not_left_behind_in_the_subclass():
    assert _swapped_and_back(Child, "step", lambda self: "patched", False) is Base.step
    assert "step" not in vars(Child) and Child().step() == "base"


def test_a_missing_attribute_is_an_error_before_anything_changes():
    module = types.ModuleType("m")
    with pytest.raises(AttributeError), replaced(module, "absent", 1):
        pass
    assert not hasattr(module, "absent")


@pytest.mark.parametrize("fail", [False, True], ids=["ended", "raised"])
def test_environment_variables_are_set_then_as_they_were(monkeypatch, fail):
    monkeypatch.setenv("TUNE_APP_TEST_SET", "before")
    monkeypatch.delenv("TUNE_APP_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError) if fail else contextlib.nullcontext():
        with environment({"TUNE_APP_TEST_SET": "a", "TUNE_APP_TEST_UNSET": "b"}):
            assert os.environ["TUNE_APP_TEST_SET"] == "a"
            assert os.environ["TUNE_APP_TEST_UNSET"] == "b"
            if fail:
                raise RuntimeError("the block failed")
    assert os.environ["TUNE_APP_TEST_SET"] == "before"
    assert "TUNE_APP_TEST_UNSET" not in os.environ
