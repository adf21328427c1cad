"""What Tune's checkpoints ask of a trainable, and whether one saves them: a function takes none
of Tune's checkpoint keys, a `tune.Trainable` class that saves no checkpoints cannot be
checkpointed, paused or copied, and one that saves them is checkpointed at each trial's end by
Tune's default. Read from the module's source before import where it shows the answer
(`saves_in_source`), from the imported trainable otherwise (`saves_checkpoints`).

Nothing here imports Ray at module level: the plan asks it before Ray starts.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Literal

from tune_app.errors import Collector, SpecError
from tune_app.methods import scheduler_of
from tune_app.user_code import CodeRef, plain_definitions, source_tree
from tune_app.user_code.source import statements

if TYPE_CHECKING:
    from tune_app.spec.resolved import Experiment


def refuse_checkpoint_keys(exp: Experiment, why: str, where: str) -> None:
    """Tune takes checkpoint_frequency and checkpoint_at_end for class trainables only."""
    errors = Collector()
    for key in ("checkpoint_frequency", "checkpoint_at_end"):
        if getattr(exp.checkpoint, key):
            errors.errors.append(
                SpecError(
                    f"{key} applies to class trainables (RLlib algorithms, tune.Trainable "
                    f"classes that save checkpoints) only; {why}",
                    path=f"{where}.checkpoint_config.{key}".lstrip("."),
                )
            )
    errors.raise_any()


def check_saving(exp: Experiment, saves: bool | None, where: str) -> None:
    """What Tune's checkpoints ask of a trainable, by `saves_checkpoints`'s answer: a function
    takes none of Tune's checkpoint keys; a class that saves no checkpoints cannot be
    checkpointed, paused or copied; one that saves them is checkpointed at each trial's end by
    Tune's default, which turns Tune's result buffering off without a word the app shows. Key
    paths are under `where`."""
    if saves is None:
        refuse_checkpoint_keys(
            exp, f"'{exp.run}' is a function: it saves checkpoints itself", where
        )
    elif saves and exp.buffered and exp.checkpoint.checkpoint_at_end is None:
        raise SpecError(
            f"class '{exp.run}' is checkpointed at each trial's end (Tune's default for a class "
            "that saves checkpoints), and Tune does not buffer such a trial's results",
            path=f"{where}.checkpoint_config.checkpoint_at_end".lstrip("."),
            suggestion="set checkpoint_config.checkpoint_at_end: false, or remove result_buffer",
        )
    elif not saves:
        why = f"class '{exp.run}' does not implement save_checkpoint"
        errors = Collector()
        with errors.check():
            refuse_checkpoint_keys(exp, why, where)
        entry = scheduler_of(exp.scheduler)
        if entry.population or entry.pauses:
            errors.errors.append(
                SpecError(
                    f"scheduler {entry.name} {'copies' if entry.population else 'pauses'} "
                    f"trials through checkpoints, but {why}",
                    path=f"{where}.scheduler".lstrip("."),
                    suggestion="implement save_checkpoint and load_checkpoint, or use "
                    "scheduler: asha",
                )
            )
        errors.raise_any()


def saves_checkpoints(trainable: Any) -> bool | None:
    """For a `tune.Trainable` class: whether it overrides `save_checkpoint` (Tune's own raises
    NotImplementedError). None for anything else (a function saves when it chooses to)."""
    from ray import tune

    if isinstance(trainable, type) and issubclass(trainable, tune.Trainable):
        return trainable.save_checkpoint is not tune.Trainable.save_checkpoint
    return None


def saves_in_source(ref: CodeRef) -> bool | None | Literal["unshown"]:
    """`saves_checkpoints`'s answer as the module's source shows it, without importing it: a
    function, or a class that defines save_checkpoint or subclasses Tune's Trainable without
    it (through the module's own classes); "unshown" where the source does not show it."""
    tree = source_tree(ref)
    defined = plain_definitions(tree)
    name = ref.name
    while (node := defined.get(name)) is not None and not node.decorator_list:
        if not isinstance(node, ast.ClassDef):
            return None if name == ref.name else "unshown"
        if any(isinstance(f, ast.FunctionDef) and f.name == "save_checkpoint" for f in node.body):
            return True
        if len(node.bases) != 1:
            return "unshown"
        name = ast.unparse(node.bases[0])
        if tree is not None and _tunes_trainable(tree, name):
            return False
    return "unshown"


def _tunes_trainable(tree: ast.Module, base: str) -> bool:
    """Whether the module's own imports make `base` (a class's base as written) Tune's Trainable:
    `Trainable` from ray.tune, `tune.Trainable` with `from ray import tune`, `ray.tune.Trainable`
    with `import ray...`; a Trainable of another package may save checkpoints itself."""
    for node in statements(tree.body):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            plain = {a.name for a in node.names if a.asname is None}
            if base == "Trainable" and node.module in ("ray.tune", "ray.tune.trainable"):
                return "Trainable" in plain
            if base == "tune.Trainable" and node.module == "ray" and "tune" in plain:
                return True
        elif isinstance(node, ast.Import) and base == "ray.tune.Trainable":
            if any(a.asname is None and a.name.split(".")[0] == "ray" for a in node.names):
                return True
    return False
