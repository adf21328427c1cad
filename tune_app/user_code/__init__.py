"""The one gate through which a spec reaches code: `module:name`, checked for the role it plays.

A spec is data, not a program. It names code only as `module:name`, and only at keys that take
code: `run:` (a trainable), `env:` (an environment class) and the RLlib config keys whose values
RLlib imports or calls (`tune_app.rllib.code.CODE_KEYS`). Each key has a `Role` saying what the
object must be. For every role:
- the standard library, the builtins and tune_app itself are never user code;
- a module found in the spec's folder, the working directory or a PYTHONPATH folder is the
  user's own code: any object of the role's shape there (a function with the role's
  signature, a class of its base);
- a module of an installed package reaches a spec only as a class of the role's base (a
  `tune.Trainable`, a `gymnasium.Env`, an `RLlibCallback`, ...) or as an object the package
  declares in the role's entry-point group (`tune_app.trainables`, `tune_app.envs`,
  `tune_app.rllib`), never as an arbitrary function: without this, `run:
  mlflow.utils.process:_exec_cmd` ran a command taken from `config`;
- a base class of the role's family (`Role.bases`) or an abstract class is never the object.
`check` runs no user code (the module's origin, the package's declared entry points and, where
the source is plain Python, the definition read from it); `CodeRef.load` checks the imported
object again on the driver, before anything is written.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, Literal, NoReturn

from tune_app.errors import SpecError, did_you_mean, import_failure
from tune_app.user_code.locating import (
    forget_stale,
    is_local,
    is_local_origin,
    is_user_origin,
    on_path,
    pythonpath_folders,
    spec_of,
)
from tune_app.user_code.source import (
    bound_names,
    followed,
    parsed_source,
    plain_definitions,
    statements,
)

# Packages a spec may not name code in, beside the standard library: the app itself.
APP_PACKAGES = frozenset({"tune_app"})
_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


@dataclass(frozen=True)
class Role:
    """What the object named at a key must be. Bases are `module:Class` texts, imported only
    when an object is checked, so `validate` imports no Ray."""

    noun: str  # with its article, for messages: "a trainable"
    allowed: str  # the accepted forms, for messages
    base: str | None  # a class must subclass it; None: no class is accepted
    functions: bool  # whether a function is accepted
    group: str  # the entry-point group in which an installed package declares such objects
    max_required: int = 99  # a function's most required positional parameters
    needs_positional: bool = False  # a function must take a positional argument (a config)
    keywords: bool = False  # called with keyword arguments: required keyword-only ones are fine
    base_shown: str = ""  # how messages name the base, where not by its class name
    # Classes of the base's family, as `defining.module:Class`, that only declare what a
    # subclass must write (Trainable.step raises NotImplementedError): never the object itself.
    bases: tuple[str, ...] = ()

    @property
    def base_name(self) -> str:
        return self.base_shown or (self.base or "").rpartition(":")[2] or "class"

    def fits(self, *, required: int, kw_required: int, positional: bool) -> bool:
        """Whether a function of this signature can be called as the role calls it: `required`
        positional and `kw_required` keyword-only parameters without defaults, `positional`
        whether it takes any positional argument."""
        return (
            (positional or not self.needs_positional)
            and required <= self.max_required
            and (self.keywords or not kw_required)
        )

    def base_class(self) -> type | None:
        if self.base is None:
            return None
        module, _, name = self.base.partition(":")
        cls: type = getattr(importlib.import_module(module), name)
        return cls


TRAINABLE = Role(
    noun="a trainable",
    allowed="a function taking a config (and optionally a reporter), or a tune.Trainable class",
    base="ray.tune:Trainable",
    functions=True,
    group="tune_app.trainables",
    max_required=2,
    needs_positional=True,
    base_shown="tune.Trainable",
    bases=(
        "ray.tune.trainable.trainable:Trainable",
        "ray.tune.trainable.function_trainable:FunctionTrainable",
        "ray.rllib.algorithms.algorithm:Algorithm",
    ),
)
ENV = Role(
    noun="an environment",
    allowed="a gymnasium.Env subclass, or a registered gymnasium id",
    base="gymnasium:Env",
    functions=False,
    group="tune_app.envs",
    base_shown="gymnasium.Env",
    bases=("gymnasium.core:Env",),
)


def user_path(spec_dir: Path | None) -> tuple[str, ...]:
    """Folders user modules are imported from: the spec's folder, the working directory, then
    PYTHONPATH's folders."""
    here = [(spec_dir or Path.cwd()).resolve(), Path.cwd().resolve()]
    return tuple(str(p) for p in dict.fromkeys([*here, *pythonpath_folders()]))


@dataclass(frozen=True)
class CodeRef:
    """A spec's `module:name` for one role, checked without running it (`check`)."""

    text: str
    role: Role
    search_path: tuple[str, ...]
    where: str  # the key path, for messages
    local: bool  # found in the spec's folder, the working directory or on PYTHONPATH
    declared: bool  # an installed package declares it in the role's entry-point group

    @property
    def module_name(self) -> str:
        return self.text.partition(":")[0]

    @property
    def name(self) -> str:
        return self.text.partition(":")[2]

    def load(self) -> Any:
        """The object, imported on the driver and checked for the role again (SpecError)."""
        module = import_user_module(self.module_name, self.search_path, self.where)
        obj = getattr(module, self.name, None)
        if obj is None:
            missing_name(
                module, self.module_name, self.name, self.where, classes=not self.role.functions
            )
        self._check_object(obj)
        return obj

    def _check_object(self, obj: Any) -> None:
        role, name, where = self.role, self.name, self.where
        # A class with preset arguments is that class: RLlib spells some of its own so
        # (env_to_module:FlattenObservations). Any other partial is no function or class.
        if isinstance(obj, functools.partial):
            if not inspect.isclass(obj.func):
                raise not_role(name, f"a functools.partial of {_named(obj.func)}", role, where)
            obj = obj.func
        _check_defined_in_user_code(obj, self.text, where)
        if inspect.isclass(obj):
            base = role.base_class()
            if base is None or not issubclass(obj, base):
                shown = f" (not a {role.base_name})" if base and role.functions else ""
                raise not_role(name, f"class {obj.__name__}{shown}", role, where)
            if inspect.isabstract(obj) or f"{obj.__module__}:{obj.__qualname__}" in role.bases:
                raise _a_base(self)
            return
        if not (role.functions and inspect.isfunction(obj)):
            what = "a function" if inspect.isfunction(obj) else f"a {type(obj).__name__}"
            raise not_role(name, what, role, where)
        if not (self.local or self.declared):
            raise _installed_function(self)
        _check_signature(obj, self)


def check(text: str, role: Role, search_path: tuple[str, ...], where: str) -> CodeRef:
    """`text` checked as `module:name` naming code for `role`, without running it; SpecError
    for a malformed reference, a module of Python or the app, a missing module, or a
    definition that cannot be of the role (read from the source where it is plain Python)."""
    if not isinstance(text, str) or not _REF.fullmatch(text):
        raise SpecError(
            f"{text!r} is not a reference to code",
            path=where,
            allowed=f"module:name naming {role.noun} ({role.allowed})",
            suggestion=_dotted_hint(text),
        )
    if (module_name := text.partition(":")[0]) == "__main__":
        raise _main_module(text, where)
    found = find_module(module_name, search_path, where)
    local = is_local_origin(found.origin, search_path)
    declared = not local and text in declared_refs(role.group)
    ref = CodeRef(text, role, search_path, where, local=local, declared=declared)
    _check_source(found, ref)
    return ref


def _dotted_hint(text: Any) -> str | None:
    if isinstance(text, str) and "." in text and ":" not in text:
        module, _, name = text.rpartition(".")
        return f"write {module}:{name} (a spec names code as module:name, checked before use)"
    return None


@cache
def declared_refs(group: str) -> frozenset[str]:
    """The `module:name` values installed packages declare in an entry-point group."""
    return frozenset(" ".join(ep.value.split()) for ep in metadata.entry_points(group=group))


def entry_point(group: str, name: str) -> str | None:
    """The `module:name` an installed package declares under `name` in `group`, or None."""
    found = [ep.value for ep in metadata.entry_points(group=group, name=name)]
    return " ".join(found[0].split()) if found else None


def find_module(module_name: str, search_path: tuple[str, ...], where: str) -> ModuleSpec:
    """The module `module_name` as found on `search_path`, without running it or its parent
    packages' `__init__`; SpecError if it is missing or is not user code."""
    top = module_name.split(".")[0]
    if top in sys.stdlib_module_names or top in APP_PACKAGES:  # a file of that name: shadowing
        raise _not_user_code(module_name, where)
    forget_stale(module_name, search_path)
    with on_path(search_path):
        try:
            found = spec_of(module_name, search_path)
        except (ImportError, ValueError) as err:
            found, why = None, str(err)
        else:
            why = "no such module"
    if found is None:
        raise SpecError(
            f"module '{module_name}' cannot be found ({why})",
            path=where,
            suggestion="looked in " + ", ".join(search_path) + " and installed packages",
        )
    if not is_user_origin(found.origin):
        raise _not_user_code(module_name, where)
    return found


def _main_module(text: str, where: str) -> SpecError:
    """`__main__:train`: the script Python started (under `python -m tune_app`, the app's)."""
    name, key = text.partition(":")[2], where.rpartition(".")[2].partition("[")[0]
    return SpecError(
        f"'{text}' names __main__, the script Python started, which Tune's workers cannot import",
        path=where,
        allowed="module:name naming a module file (beside the spec, in the working directory, "
        "or installed)",
        suggestion=f"move {name} into a module file, e.g. {name.lower()}.py beside the spec, and "
        f"write {key}: {name.lower()}:{name}",
    )


def _not_user_code(module_name: str, where: str, written: str | None = None) -> SpecError:
    """`module_name` is Python's or the app's; `written`: the spec's reference to it, if other."""
    shown = f"'{written}' ({module_name})" if written else f"'{module_name}'"
    return SpecError(
        f"{shown} is part of Python or of tune_app, not a module of trainables or envs",
        path=where,
        suggestion="a spec names its own code: write package.module:function for a module in "
        "the spec's folder, the working directory or an installed package",
    )


def _installed_function(ref: CodeRef) -> SpecError:
    return SpecError(
        f"'{ref.text}' is a function of an installed package that does not declare it as "
        f"{ref.role.noun}",
        path=ref.where,
        allowed=f"a function in a module beside the spec, in the working directory or on "
        f"PYTHONPATH; from an installed package, a {ref.role.base_name} subclass or an entry "
        f"point in group '{ref.role.group}'",
        suggestion=f"wrap it in a module of your own, or declare it in the package's "
        f'[project.entry-points."{ref.role.group}"]',
    )


def source_tree(ref: CodeRef) -> ast.Module | None:
    """The parsed source of the module `ref` names, where it is plain Python (no import)."""
    return parsed_source(find_module(ref.module_name, ref.search_path, ref.where))


def defined_as(ref: CodeRef) -> Literal["class", "function"] | None:
    """Whether the module's source defines `ref`'s name as a class or a function at its top
    level (no import); None where the source does not show it plainly."""
    node = plain_definitions(source_tree(ref)).get(ref.name)
    if node is None:
        return None
    return "class" if isinstance(node, ast.ClassDef) else "function"


def _check_source(module: ModuleSpec, ref: CodeRef) -> None:
    """Check what the module's source binds to the name, without running it: a function must be
    one the role takes (from an installed package, declared), a name imported from the standard
    library is refused, and a name the module never binds is missing. Names bound in ways the
    source does not show plainly are left to the check after import."""
    tree = parsed_source(module)
    if tree is None:
        return  # importing it reports the problem, at run
    _check_reexported(tree, module, ref)
    source = followed(tree, module, ref.name)
    if source and isinstance(source[0], ast.Import):
        raise not_role(ref.name, "a module", ref.role, ref.where)  # as `load` says of it
    if f"{source[1] if source else module.name}:{ref.name}" in ref.role.bases:
        raise _a_base(ref)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == ref.name:
            _check_function_source(node, ref)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == ref.name and _is_stdlib_name(node.module):
                    raise _not_user_code(f"{node.module}.{alias.name}", ref.where, ref.text)
    bound = bound_names(tree)
    if bound is not None and ref.name not in bound:
        defined = _could_be(tree, ref)
        raise SpecError(
            f"module '{ref.module_name}' defines no '{ref.name}'",
            path=ref.where,
            allowed=defined[:20],
            suggestion=did_you_mean(ref.name, defined),
        )


def _could_be(tree: ast.Module, ref: CodeRef) -> list[str]:
    """The names the module's source defines that could be of `ref`'s role: its classes, and its
    functions where the role takes them (an installed package's: those it declares), not what
    it imports or assigns."""
    found = {
        node.name
        for node in statements(tree.body)
        if isinstance(node, ast.ClassDef)
        or (
            isinstance(node, ast.FunctionDef)
            and ref.role.functions
            and (ref.local or f"{ref.module_name}:{node.name}" in declared_refs(ref.role.group))
        )
    }
    return sorted(n for n in found if not n.startswith("_"))


def _check_reexported(tree: ast.Module, module: ModuleSpec, ref: CodeRef) -> None:
    """An installed package's function its `__init__` re-exports (numpy:load) is refused here,
    as the gate refuses it at run."""
    if ref.local or ref.declared or not ref.role.functions:
        return
    defined = followed(tree, module, ref.name)
    if defined and isinstance(defined[0], ast.FunctionDef | ast.AsyncFunctionDef):
        raise _installed_function(ref)


def _a_base(ref: CodeRef) -> SpecError:
    return SpecError(
        f"'{ref.text}' is a base class, whose methods a subclass must write, not {ref.role.noun}",
        path=ref.where,
        allowed=ref.role.allowed,
        suggestion="name a subclass of it that writes them",
    )


def _check_function_source(node: ast.FunctionDef | ast.AsyncFunctionDef, ref: CodeRef) -> None:
    if not ref.role.functions:
        raise not_role(ref.name, "a function", ref.role, ref.where)
    if not (ref.local or ref.declared):
        raise _installed_function(ref)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    fits = ref.role.fits(
        required=len(positional) - len(args.defaults),
        kw_required=sum(d is None for d in args.kw_defaults),
        positional=bool(positional) or args.vararg is not None,
    )
    if isinstance(node, ast.AsyncFunctionDef) or not fits:
        raise not_role(ref.name, _signature(node), ref.role, ref.where)


def _check_signature(obj: Any, ref: CodeRef) -> None:
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        raise not_role(ref.name, "a function without a signature", ref.role, ref.where) from None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    fits = ref.role.fits(
        required=sum(p.default is p.empty for p in positional),
        kw_required=sum(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in params),
        positional=bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params),
    )
    if inspect.iscoroutinefunction(obj) or not fits:
        what = f"def {obj.__name__}{inspect.signature(obj)}"[:200]
        raise not_role(ref.name, what, ref.role, ref.where)


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{kind} {node.name}({ast.unparse(node.args)})"[:200]


def _is_stdlib_name(module_name: str) -> bool:
    return module_name.split(".")[0] in sys.stdlib_module_names


def import_user_module(module_name: str, search_path: tuple[str, ...], where: str) -> Any:
    """Import a user's module from `search_path` or the installed packages (driver only).

    A module found in the spec's folder, the working directory or on PYTHONPATH is pickled by
    value, so Ray workers that cannot import it (not installed, not on their path) still run it.
    """
    find_module(module_name, search_path, where)
    with on_path(search_path):
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # any import failure is the user's module
            raise SpecError(
                f"importing module '{module_name}' failed: {import_failure(err)}",
                path=where,
            ) from None
    if is_local(module, search_path):
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    return module


def _check_defined_in_user_code(obj: Any, written: str, where: str) -> None:
    defined_in = getattr(obj, "__module__", None) or ""
    top, module = defined_in.split(".")[0], sys.modules.get(defined_in)
    if (top in sys.builtin_module_names or top in APP_PACKAGES) or (
        module is not None and not is_user_origin(getattr(module, "__file__", None))
    ):
        raise _not_user_code(f"{defined_in}.{_named(obj)}", where, written)


def _named(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", type(obj).__name__))


def not_role(name: str, what: str, role: Role, where: str) -> SpecError:
    """SpecError: the object named `name` is `what`, not of `role`."""
    return SpecError(
        f"'{name}' is {what}, not {role.noun}",
        path=where,
        allowed=role.allowed,
        suggestion="Tune calls a trainable with the trial's config" if role is TRAINABLE else None,
    )


def missing_name(
    module: Any, module_name: str, name: str, where: str, *, classes: bool
) -> NoReturn:
    """SpecError naming what `module` does define, when it has no `name`."""
    if classes:
        names = [n for n, v in vars(module).items() if isinstance(v, type)]
        what = f"module '{module_name}' has no class '{name}'"
    else:
        names = [
            n
            for n, v in vars(module).items()
            if inspect.isfunction(v)
            or (inspect.isclass(v) and getattr(v, "__module__", None) == module.__name__)
        ]
        what = f"module '{module_name}' has no function or class '{name}'"
    raise SpecError(what, path=where, allowed=names, suggestion=did_you_mean(name, names))
