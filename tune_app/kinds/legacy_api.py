"""Names of Tune's function API that Ray 2 removed, found in a trainable's source before Ray
starts: the trial would fail on its first use with only an AttributeError.

Every generation of reporting still works (`tune_app.kinds.builtin` adapts them); what Ray 2
took away with no adapter possible is the session API around it: the checkpoint context
manager and the trial-info functions. Each entry says what replaces it.
"""

from __future__ import annotations

import ast

from tune_app.errors import SpecError

# Removed `ray.tune` name -> what to write instead (Ray 2.60's API).
REMOVED_TUNE: dict[str, str] = {
    "checkpoint_dir": "save with tune.report(metrics, checkpoint=tune.Checkpoint.from_directory("
    "d)) and restore from tune.get_checkpoint()",
    "track": "tune.report({...}) reports metrics",
    "get_trial_dir": "tune.get_context().get_trial_dir()",
    "get_trial_name": "tune.get_context().get_trial_name()",
    "get_trial_id": "tune.get_context().get_trial_id()",
    "is_session_enabled": "a trainable always runs in a Tune session now",
    "save_checkpoint": "tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))",
}


def check_removed_tune_api(tree: ast.Module, module_name: str, where: str) -> None:
    """SpecError naming the first use of a removed `ray.tune` name in a module's source, with
    its line and what replaces it."""
    aliases = _tune_aliases(tree)
    for node in ast.walk(tree):
        name = _removed_use(node, aliases)
        if name is not None:
            raise SpecError(
                f"{module_name}.py:{getattr(node, 'lineno', '?')} uses tune.{name}, which Ray 2 "
                "removed (the trial would fail there)",
                path=where,
                suggestion=REMOVED_TUNE[name],
            )


def _tune_aliases(tree: ast.Module) -> set[str]:
    """The names `ray.tune` is bound to (`from ray import tune`, `import ray.tune as t`), and
    `ray` (as `ray.tune.x`)."""
    aliases = {"ray.tune"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ray":
            aliases |= {a.asname or a.name for a in node.names if a.name == "tune"}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "ray.tune" and a.asname}
    return aliases


def _removed_use(node: ast.AST, aliases: set[str]) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in REMOVED_TUNE:
        if ast.unparse(node.value) in aliases:
            return node.attr
    if isinstance(node, ast.ImportFrom) and node.module == "ray.tune":
        return next((a.name for a in node.names if a.name in REMOVED_TUNE), None)
    return None
