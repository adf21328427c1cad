"""For the length of a `with` block, an attribute of Ray's or environment variables set, and put
back as they were after, however the block ends: each patch in this package says what it replaces
and why, and this says how, once."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

_ABSENT = object()


@contextlib.contextmanager
def replaced(owner: Any, name: str, value: Any) -> Iterator[Any]:
    """While this holds, `owner.name` (a module's or a class's) is `value`; yields what
    `owner.name` was. After, `owner` holds exactly what it held: its own entry (a class's
    function as defined, not as looked up), or none where the attribute was inherited."""
    before = getattr(owner, name)
    own = vars(owner).get(name, _ABSENT)
    setattr(owner, name, value)
    try:
        yield before
    finally:
        if own is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, own)


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """While this holds, the environment variables `values` are set; after, each is as it was
    (unset where it was unset)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
