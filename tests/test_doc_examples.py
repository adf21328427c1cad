"""Examples in the docs cannot rot: every ```yaml block of docs/ and README.md is a spec that
`validate` accepts, or is marked (a MyST comment on the line before it) as what else it is:

- `% spec-fragment: ...`: file-level keys, checked inside a small spec that runs es_cartpole;
- `% spec-error: ...`: a deliberate error; the ```text block after it shows the command and the
  exact message `validate` prints, which must be what it prints now;
- `% not-a-spec: ...`: YAML for another tool (a Ray cluster config): it must parse.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

import tune_app

from .conftest import ROOT

BLOCK = re.compile(r"(?:^% (?P<mark>[\w-]+):[^\n]*\n)?^```yaml\n(?P<body>.*?)^```\n", re.M | re.S)
TEXT_AFTER = re.compile(r"\s*```text\n(?P<body>.*?)^```\n", re.M | re.S)
MARKS = ("spec-fragment", "spec-error", "not-a-spec")
FRAGMENT_BASE = "experiments:\n  e:\n    run: es_cartpole\n    stop: {training_iteration: 2}\n"


def pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "_build" not in p.parts]
    return [ROOT / "README.md", *docs]


def blocks() -> list:
    found = []
    for page in pages():
        text = page.read_text()
        for n, m in enumerate(BLOCK.finditer(text), 1):
            after = TEXT_AFTER.match(text, m.end())
            shown = after.group("body") if after else None
            name = f"{page.relative_to(ROOT)}#{n}"
            found.append(pytest.param(m.group("mark"), m.group("body"), shown, id=name))
    return found


def test_the_docs_have_yaml_examples():
    assert len(blocks()) >= 5


@pytest.mark.parametrize(("mark", "body", "shown"), blocks())
def test_yaml_block(mark, body, shown, tmp_path, monkeypatch):
    assert mark in (None, *MARKS), f"unknown mark {mark!r}: one of {MARKS}"
    if mark == "not-a-spec":
        assert isinstance(yaml.safe_load(body), dict)
        return
    if mark == "spec-fragment":
        body = FRAGMENT_BASE + body
    (tmp_path / "spec.yaml").write_text(body)
    monkeypatch.chdir(tmp_path)
    if mark != "spec-error":
        tune_app.validate("spec.yaml")
        return
    assert shown is not None, "an error example is followed by a ```text block of its message"
    sys.path.insert(0, str(ROOT))
    from docs.gen.shell import tune_app as run_cli

    command, _, message = shown.partition("\n")
    assert command.startswith("$ python -m tune_app "), command
    code, _, err = run_cli(command.split()[4:], tmp_path)
    assert code == 2
    assert err == message


# Tutorial files that are deliberately wrong, or that continue a run the tutorial makes first,
# and the key path their one error names.
BROKEN_FILES = {
    "ci_typo.yaml": "classic.num_sample",
    "across_more.yaml": "experiments.tpe_more.warm_start[0]",  # results/tpe, made before it
}


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "docs/tutorials/files").glob("*.yaml")),
    ids=lambda p: p.name,
)
def test_tutorial_spec_files_validate(path, monkeypatch):
    """The tutorials' spec files, checked without Ray (the tutorial tests also run them)."""
    from tune_app.errors import SpecError

    monkeypatch.chdir(path.parent)  # their modules are found beside them, as for a user
    if path.name not in BROKEN_FILES:
        tune_app.validate(path.name)
        return
    with pytest.raises(SpecError) as raised:
        tune_app.validate(path.name)
    assert raised.value.path == BROKEN_FILES[path.name]
