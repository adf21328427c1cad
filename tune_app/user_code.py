"""What a spec may make the app import and call: a trainable or an env class named `module:name`.

A spec is data, not a program: `run: module:name` must name a trainable (a function taking a
config, optionally a reporter, or a `tune.Trainable` subclass) and `env: module:Class` a
gymnasium `Env` subclass, defined outside the Python standard library, the builtins and this
app. Without this, `run: subprocess:call` in a YAML file ran a command taken from `config`.
`validate` checks without running user code (the module's origin and, where its source is
plain Python, the definition read from the source); `import_user_module` and the `check_*`
functions check the imported object again on the driver, before anything is written.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any, NoReturn

from tune_app.errors import SpecError, did_you_mean

# Packages a spec may not name code in, beside the standard library: the app itself.
APP_PACKAGES = frozenset({"tune_app"})
_STDLIB_DIRS = tuple(
    str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("stdlib", "platstdlib")
)
_TRAINABLE_FORM = (
    "a function taking a config (and optionally a reporter), or a tune.Trainable class"
)


def user_path(spec_dir: Path | None) -> tuple[str, ...]:
    """Folders user modules are imported from: the spec's folder, then the working directory."""
    return tuple(
        str(p) for p in dict.fromkeys([(spec_dir or Path.cwd()).resolve(), Path.cwd().resolve()])
    )


def find_module(module_name: str, search_path: tuple[str, ...], where: str) -> ModuleSpec:
    """The module `module_name` as found on `search_path`, without running it (beyond its parent
    packages' `__init__`); SpecError if it is missing or is not user code."""
    top = module_name.split(".")[0]
    if top in sys.builtin_module_names or top in APP_PACKAGES:
        raise _not_user_code(module_name, where)
    with _on_path(search_path):
        try:
            found = importlib.util.find_spec(module_name)
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


def is_user_origin(origin: str | None) -> bool:
    """Whether a module loaded from `origin` is outside the standard library and the builtins."""
    if origin is None or origin in ("built-in", "frozen"):
        return False
    path = str(Path(origin).resolve())
    in_stdlib = any(path.startswith(d + "/") for d in _STDLIB_DIRS)
    return not in_stdlib or "site-packages" in path or "dist-packages" in path


def _not_user_code(module_name: str, where: str) -> SpecError:
    return SpecError(
        f"'{module_name}' is part of Python or of tune_app, not a module of trainables or envs",
        path=where,
        suggestion="a spec names its own code: write package.module:function for a module in "
        "the spec's folder, the working directory or an installed package",
    )


def check_source(module: ModuleSpec, name: str, where: str, *, env: bool = False) -> None:
    """Check what the module's source defines as `name`, without running it: a function must
    take a config, an env must be a class, and a name imported from the standard library is
    refused. Names the source does not define plainly are left to the check after import."""
    if not module.origin or not module.origin.endswith(".py"):
        return
    try:
        tree = ast.parse(Path(module.origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return  # importing it reports the problem, at run
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            if env:
                raise _not_env(name, "a function", where)
            if isinstance(node, ast.AsyncFunctionDef) or not _takes_config(node.args):
                raise _not_trainable(name, f"{_signature(node)}", where)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name and _is_stdlib_name(node.module):
                    raise _not_user_code(f"{node.module}.{alias.name}", where)


def _takes_config(args: ast.arguments) -> bool:
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kw_required = sum(d is None for d in args.kw_defaults)
    return (bool(positional) or args.vararg is not None) and required <= 2 and not kw_required


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{kind} {node.name}({ast.unparse(node.args)})"[:200]


def _is_stdlib_name(module_name: str) -> bool:
    return module_name.split(".")[0] in sys.stdlib_module_names


def import_user_module(module_name: str, search_path: tuple[str, ...], where: str) -> Any:
    """Import a user's module from `search_path` or the installed packages (driver only).

    A module found in the spec's folder or the working directory is pickled by value, so Ray
    workers that cannot import it (not installed, not on their path) still run it.
    """
    _forget_stale(module_name, search_path)
    find_module(module_name, search_path, where)
    with _on_path(search_path):
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # any import failure is the user's module
            raise SpecError(
                f"importing module '{module_name}' failed: {type(err).__name__}: {err}",
                path=where,
            ) from None
    if _is_local(module, search_path):
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    return module


def check_trainable(obj: Any, name: str, where: str) -> None:
    """SpecError unless the imported `obj` is a trainable defined outside Python and the app."""
    _check_defined_in_user_code(obj, name, where)
    if inspect.isclass(obj):
        from ray import tune

        if not issubclass(obj, tune.Trainable):
            raise _not_trainable(name, f"class {obj.__name__} (not a tune.Trainable)", where)
        return
    if not inspect.isfunction(obj):
        raise _not_trainable(name, f"a {type(obj).__name__}", where)
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        raise _not_trainable(name, "a function without a signature", where) from None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    kw_required = [p for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    takes_any = any(p.kind is p.VAR_POSITIONAL for p in params)
    if inspect.iscoroutinefunction(obj) or len(required) > 2 or kw_required:
        raise _not_trainable(name, f"def {obj.__name__}{inspect.signature(obj)}"[:200], where)
    if not positional and not takes_any:
        raise _not_trainable(name, f"def {obj.__name__}{inspect.signature(obj)}"[:200], where)


def check_env_class(obj: Any, name: str, where: str) -> None:
    """SpecError unless the imported `obj` is a gymnasium `Env` subclass of user code."""
    import gymnasium

    _check_defined_in_user_code(obj, name, where)
    if not (inspect.isclass(obj) and issubclass(obj, gymnasium.Env)):
        what = f"class {obj.__name__}" if inspect.isclass(obj) else f"a {type(obj).__name__}"
        raise _not_env(name, what, where)


def _check_defined_in_user_code(obj: Any, name: str, where: str) -> None:
    defined_in = getattr(obj, "__module__", None) or ""
    top = defined_in.split(".")[0]
    if top in sys.builtin_module_names or top in APP_PACKAGES:
        raise _not_user_code(f"{defined_in}.{name}", where)
    module = sys.modules.get(defined_in)
    if module is not None and not is_user_origin(getattr(module, "__file__", None)):
        raise _not_user_code(f"{defined_in}.{name}", where)


def _not_trainable(name: str, what: str, where: str) -> SpecError:
    return SpecError(
        f"'{name}' is {what}, not a trainable",
        path=where,
        allowed=_TRAINABLE_FORM,
        suggestion="Tune calls a trainable with the trial's config",
    )


def _not_env(name: str, what: str, where: str) -> SpecError:
    return SpecError(
        f"'{name}' is {what}, not an environment",
        path=where,
        allowed="a gymnasium.Env subclass, or a registered gymnasium id",
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


def _forget_stale(module_name: str, search_path: tuple[str, ...]) -> None:
    """Drop a module of that name imported earlier in this process from another folder (another
    spec's), so the spec's own module is imported, not the cached one."""
    top = module_name.split(".")[0]
    cached = sys.modules.get(top)
    origin = getattr(cached, "__file__", None)
    if cached is None or origin is None or _is_local(cached, search_path):
        return
    if any((Path(f) / top).is_dir() or (Path(f) / f"{top}.py").is_file() for f in search_path):
        for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
            del sys.modules[name]


def _is_local(module: Any, folders: tuple[str, ...]) -> bool:
    origin = getattr(module, "__file__", None) or ""
    return any(Path(origin).resolve().is_relative_to(f) for f in folders) and (
        "site-packages" not in origin
    )


@contextmanager
def _on_path(folders: tuple[str, ...]) -> Iterator[None]:
    added = [f for f in folders if f not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for f in added:
            sys.path.remove(f)
