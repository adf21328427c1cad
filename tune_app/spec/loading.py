"""Safe, bounded YAML reading: a spec file's text to plain data, every failure a SpecError that
names the file. No Python tags, no duplicate keys, and bounds on size, depth and alias expansion,
so a hostile or broken file is refused in milliseconds.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml

from tune_app.errors import SpecError, clip, first_line
from tune_app.rundir.files import open_regular
from tune_app.space import KINDS

DICT_SPEC = "<dict>"  # the file name a spec given as a mapping goes by (run.json, messages)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader that also refuses duplicate keys (PyYAML keeps the last silently).
    Merge keys (`<<: *defaults`) work as in YAML 1.1: a mapping's own keys override merged ones,
    so only its own keys are checked for duplicates."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # SafeLoader's construct_mapping merges these
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, typing.Hashable):
                raise _not_a_key(key_node)
            if key in seen:
                first, line = seen[key], key_node.start_mark.line + 1
                # `1`, `1.0` and `true` are one key once read, as in Python
                same = f", the same key as '{first.value}'" if first.value != key_node.value else ""
                raise SpecError(
                    f"duplicate key '{key_node.value}' at line {line}{same}",
                    suggestion="each key may appear once in a mapping",
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _not_a_key(node: yaml.Node) -> SpecError:
    """A mapping or a list used as a key; `x: {{grid_search: [1]}}` (a search space as a key)
    has one pair of braces too many."""
    mapping = isinstance(node, yaml.MappingNode)
    what, example = ("a mapping", "{a: 1}") if mapping else ("a list", "[1, 2]")
    if mapping and any(k.value in KINDS for k, _ in node.value):
        hint = "`x: {{grid_search: [1]}}` has one pair of braces too many: `x: {grid_search: [1]}`"
    else:
        hint = f"{what} is a value, under a name: `x: {example}`"
    return SpecError(
        f"{what} is used as a key{_at(node.start_mark)}", suggestion=f"keys are names; {hint}"
    )


# Numbers as YAML 1.2's core schema reads them, not as PyYAML's YAML 1.1: `010` is 10 (1.1: 8,
# octal; 1.2 writes 0o10), `1:30` is text (1.1: 90, base 60), and `1e-4`, `1E5` are floats
# (1.1: text, without a dot and a signed exponent), as people write learning rates. Digits may
# be grouped with `_` as in Python.
_INT = re.compile(r"^(?:[-+]?[0-9][0-9_]*|0o[0-7_]+|0x[0-9a-fA-F_]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if not tag.endswith((":int", ":float"))]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    if text.startswith(("0o", "0x")):
        return int(text, 0)
    return int(text, 10)  # leading zeros are decimal in YAML 1.2


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
# Dates and times stay the text written (YAML 1.2's core schema has no timestamps): a trainable
# would get a datetime, and a run's records could not write it as JSON.
_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


# Bounds on what a spec file may make the loader build, so a hostile or broken file is refused
# in milliseconds instead of exhausting memory or the stack. A spec is a few KB (Ray's largest
# published RLlib YAML is under 10 KB), so each bound is far above any real spec:
# - MAX_SPEC_BYTES: the file's size, checked before it is read;
# - MAX_NODES: scalars and collections after aliases are expanded. PyYAML shares an anchored
#   value between its aliases, but everything after loading (validation, copies, Tune's
#   variant generator) walks it expanded: nine nested aliases of ten make 10**9 nodes (the
#   "billion laughs" file, which reached 11.8 GB before this bound);
# - MAX_EXPANDED_CHARS: the text of the scalars after aliases are expanded: one long string
#   repeated by aliases stays under MAX_NODES values and becomes gigabytes of text;
# - MAX_DEPTH: nested collections; the loader and every walker of the spec recurse, and
#   Python's stack ends near 1,000 frames.
MAX_SPEC_BYTES = 1_000_000
MAX_NODES = 100_000
MAX_EXPANDED_CHARS = 10 * MAX_SPEC_BYTES
MAX_DEPTH = 64


def spec_text(path: Path) -> str | None:
    """The text of a spec file where it is one: a regular file (not a pipe or a device) of at
    most MAX_SPEC_BYTES, in UTF-8, its newlines as Python's text mode reads them; None for
    anything else (a run folder received from someone names files that may be anything)."""
    try:
        with open_regular(path) as f:
            data = f.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            return None
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except (OSError, UnicodeDecodeError):
        return None


def read_yaml(path: Path) -> tuple[str, Any]:
    """Read and safely parse a YAML file, with every failure as a SpecError naming the file."""
    file = str(path)
    if not path.exists():
        raise SpecError(
            "no such file",
            file=file,
            suggestion=f"looked for {path.absolute()} (relative to {Path.cwd()})",
        )
    if path.is_dir():
        raise SpecError(
            "is a directory, not a spec file",
            file=file,
            suggestion="pass a .yaml file, such as search_spaces/grid.yaml",
        )
    try:
        with open_regular(path, links=True) as f:  # not a pipe, which would never end
            raw = f.read(MAX_SPEC_BYTES + 1)
    except PermissionError:
        raise SpecError("cannot be read (permission denied)", file=file) from None
    except OSError as err:
        raise SpecError(f"cannot be read ({err.strerror})", file=file) from None
    _check_size(len(raw), file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(
            "is not a text file (not UTF-8)", file=file, suggestion="a spec is a YAML text file"
        ) from None
    return text, read_yaml_text(text, path)


def _check_size(size: int, file: str) -> None:
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"is larger than {MAX_SPEC_BYTES:,} bytes, the most a spec file may hold",
            file=file,
            suggestion="a spec names a trainable and its search space; data belongs in files "
            "the trainable reads",
        )


def check_bounds(text: str, file: str) -> None:  # noqa: C901
    """SpecError if the YAML `text` nests deeper than MAX_DEPTH or expands to more than
    MAX_NODES values or MAX_EXPANDED_CHARS characters of text; read from PyYAML's event stream,
    which neither recurses nor expands."""
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> expanded values and characters it marks
    open_: list[tuple[str | None, int, int]] = []  # collections being read: anchor, so far
    total, chars = 0, 0

    def add(n: int, c: int, mark: Any) -> None:
        nonlocal total, chars
        total, chars = total + n, chars + c
        if open_:
            anchor, count, held = open_[-1]
            open_[-1] = (anchor, count + n, held + c)
        if total > MAX_NODES or chars > MAX_EXPANDED_CHARS:
            what = (
                f"{MAX_NODES:,} values"
                if total > MAX_NODES
                else f"{MAX_EXPANDED_CHARS:,} characters"
            )
            raise SpecError(
                f"expands to more than {what}{_at(mark)} (YAML aliases repeat what their anchor "
                "holds)",
                file=file,
                suggestion="a spec this large is a mistake or an attack; write the values out",
            )

    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_) >= MAX_DEPTH:
                raise SpecError(
                    f"nests deeper than {MAX_DEPTH} levels{_at(event.start_mark)}",
                    file=file,
                    suggestion="a spec's values nest a few levels deep",
                )
            add(1, 0, event.start_mark)
            open_.append((event.anchor, 1, 0))
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, count, held = open_.pop()
            if anchor is not None:
                sizes[anchor] = (count, held)
            if open_:  # add() counted its start
                above, so_far, held_above = open_[-1]
                open_[-1] = (above, so_far + count - 1, held_above + held)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = (1, len(event.value))
            add(1, len(event.value), event.start_mark)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in {anchor for anchor, _, _ in open_}:
                raise SpecError(
                    f"alias *{event.anchor} refers to a value that holds it{_at(event.start_mark)}",
                    file=file,
                    suggestion="a spec's values cannot contain themselves",
                )
            add(*sizes.get(event.anchor, (1, 0)), event.start_mark)


def mapping_text(data: dict[str, Any]) -> str:
    """A spec given as a mapping (the Python API) as the YAML a file would hold; SpecError at
    the key path of the first value that is not plain data."""
    try:
        return yaml.safe_dump(data, sort_keys=False)
    except yaml.YAMLError:
        path, value = _not_plain(data, "")
    name, module = getattr(value, "__qualname__", None), getattr(value, "__module__", None)
    if not (callable(value) and isinstance(name, str) and isinstance(module, str)):
        raise SpecError(
            f"{type(value).__name__} {clip(repr(value), 100)} is not plain data",
            file=DICT_SPEC,
            path=path or None,
            allowed="text, numbers, booleans, null, lists and mappings",
        )
    # A function or class, as Ray Tune takes a trainable: a spec names code, as YAML would.
    if not name.isidentifier():  # a lambda, a method, a function defined in a function
        hint = "define it at the top level of a module file and write 'module:name'"
    elif module == "__main__":  # a notebook's or a script's, which Tune's workers cannot import
        hint = f"move {name} into a module file, e.g. {name.lower()}.py in the working "
        hint += f"directory, and write '{name.lower()}:{name}'"
    else:
        hint = f"write '{module}:{name}'"
    raise SpecError(
        f"{name} is a Python object; a spec names its trainable and other code as text",
        file=DICT_SPEC,
        path=path or None,
        allowed="'module:function' or 'module:Class' (a trainable also by its registered name)",
        suggestion=hint,
    )


def _not_plain(value: Any, path: str) -> tuple[str, Any]:
    """The key path and the value of the first part of `value` YAML cannot hold."""
    if isinstance(value, dict | list):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in pairs:
            where = f"{path}[{key}]" if isinstance(value, list) else f"{path}.{key}".lstrip(".")
            try:
                yaml.safe_dump(item)
            except yaml.YAMLError:
                return _not_plain(item, where)
    return path, value  # itself, or a mapping whose key is not plain data


def read_yaml_text(text: str, path: Path) -> Any:
    """Safely parse YAML text read from `path`; every failure is a SpecError naming the file."""
    file = str(path)
    try:
        _check_size(len(text.encode("utf-8", "surrogatepass")), file)
        check_bounds(text, file)
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except SpecError as err:
        raise err.with_file(file) from None
    except yaml.constructor.ConstructorError as err:
        if "unhashable key" in str(err.problem):  # in a merged mapping (`<<: {[1]: 2}`)
            raise SpecError(
                f"a mapping or a list is used as a key{_at(err.problem_mark)}",
                file=file,
                suggestion="keys are names",
            ) from None
        raise SpecError(
            f"unsupported YAML tag ({first_line(err.problem)}){_at(err.problem_mark)}",
            file=file,
            suggestion="specs are plain YAML; python tags are never evaluated",
        ) from None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError(
            f"is not valid YAML: {first_line(problem)}{_at(getattr(err, 'problem_mark', None))}",
            file=file,
        ) from None
    except ValueError as err:  # a constructor's own: an integer of more than 4,300 digits
        # Python's own words end by telling a programmer to raise its limit: not the spec's way.
        why = first_line(err).split("; use sys.set_int_max_str_digits()")[0]
        raise SpecError(f"holds a value Python cannot read: {why}", file=file) from None
    return data


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
