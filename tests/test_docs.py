"""The docs are made from the code and checked against it: the generated pages match what the
generator writes now, every spec and method field has the description the reference shows."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from pydantic import BaseModel

from tune_app.methods import SCHEDULERS, SEARCHERS
from tune_app.spec import models

from .conftest import ROOT


def generator():
    """docs/generate.py as a module (docs/ is not a package the app installs)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs/generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_generated_pages_are_what_the_generator_writes():
    stale = [str(p.relative_to(ROOT)) for p in generator().stale()]
    assert not stale, f"stale generated pages (run python docs/generate.py): {stale}"


def documented_models() -> list[type[BaseModel]]:
    """The spec's models (found under its keys, as the reference page finds them) and every
    searcher's and scheduler's options."""
    generator()  # puts the checkout on sys.path, for docs.gen
    from docs.gen.spec_ref import documented

    spec_models = [*documented(), models.ExpectSpec]
    methods = [entry.options for table in (SEARCHERS, SCHEDULERS) for entry in table.values()]
    return spec_models + methods


def test_the_reference_finds_every_nested_spec_model():
    found = {m.__name__ for m in documented_models()}
    assert {"ResourcesSpec", "CheckpointSpec", "Bound", "TensorBoardSpec", "EnvGridSpec"} <= found


@pytest.mark.parametrize("model", documented_models(), ids=lambda m: m.__name__)
def test_every_field_has_a_description(model):
    """The field descriptions are the reference's single source: none may be left out."""
    missing = [
        name
        for name, field in model.model_fields.items()
        if name != "type" and not (field.description or "").strip()
    ]
    assert not missing, f"{model.__name__}: fields without description=: {missing}"
    assert (model.__doc__ or "").strip(), f"{model.__name__} has no docstring"


def test_readme_is_a_front_door_of_at_most_20_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 20_000, f"README.md is {size} bytes: move the detail into docs/"


def test_readme_lists_every_tutorial():
    """README's tutorial list left out three of docs/tutorials/: a new one must be added there."""
    import re

    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\(docs/tutorials/([\w.-]+\.md)\)", readme))
    tutorials = {p.name for p in (ROOT / "docs" / "tutorials").glob("*.md")}
    assert tutorials and tutorials <= linked, f"not in README: {sorted(tutorials - linked)}"
