"""User modules are imported from the spec's own folder, even when a module of the same name
from another spec's folder was imported earlier in the process."""

from __future__ import annotations

from tune_app.registry import resolve


def test_each_spec_folder_gets_its_own_module_of_a_shared_name(tmp_path):
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "same.py").write_text(f"def train(config):\n    return {name!r}\n")
    first = resolve("same:train", tmp_path / "one").load()
    second = resolve("same:train", tmp_path / "two").load()
    assert (first({}), second({})) == ("one", "two")
