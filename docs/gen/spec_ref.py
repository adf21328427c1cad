"""docs/reference/spec.md: every key of both spec forms, from the pydantic models' fields."""

from __future__ import annotations

from docs.gen.common import HEADER, code, field_rows, first_paragraph, table
from tune_app.spec import legacy, models

HEAD = ("key", "type", "default", "meaning")


def _section(title: str, model: type, intro: str, skip: tuple[str, ...] = ()) -> str:
    doc = first_paragraph(model.__doc__)
    return f"## {title}\n\n{intro}{doc}\n\n" + table(HEAD, field_rows(model, skip))


def _legacy() -> str:
    rows = [[code(old), "read as " + code(new)] for old, (_, new) in legacy.LEGACY_KEYS.items()]
    rows += [[code(alias), "an alias of " + code(key)] for alias, key in legacy.ALIASES.items()]
    rows += [[code(old), "dropped: " + why] for old, why in legacy.NO_EFFECT_KEYS.items()]
    return (
        "## Legacy keys and aliases\n\n"
        "Tune's old experiment keys are read with one warning each; keys Ray 2 has nothing "
        "for are dropped with a warning saying why.\n\n" + table(("key", "what happens"), rows)
    )


def page() -> str:
    settings = set(models.Settings.model_fields)
    own = tuple(settings)
    parts = [
        HEADER,
        "# Spec keys\n\n",
        "A spec file has one of two forms, told apart by a top-level `experiments:` key. In the "
        "**classic form** every top-level key names an experiment, whose keys are those of "
        "[Experiment keys](#experiment-keys). In the **app form** the top level holds the "
        "[file-level keys](#file-level-keys) and `experiments:`; every experiment inherits the "
        "file-level keys and may override them. An unknown key anywhere is an error naming the "
        "allowed keys.\n\n",
        _section(
            "File-level keys",
            models.AppSpec,
            "Every key but `experiments` may also be set in an experiment, whose value wins. ",
        ),
        "\n",
        _section(
            "Experiment keys",
            models.ExperimentSpec,
            "Besides the file-level keys above (except `experiments`). ",
            skip=own,
        ),
        "\n",
        _section("resources_per_trial", models.ResourcesSpec, "Tune's `CPU` and `GPU` too. "),
        "\n",
        _section("checkpoint_config", models.CheckpointSpec, ""),
        "\n",
        _section(
            "expect",
            models.ExpectAsWritten,
            "Every other key is a metric name with a bound (below). ",
        ),
        "\n",
        _section("A metric's bound in expect", models.Bound, ""),
        "\n",
        _section("tensorboard", models.TensorBoardSpec, ""),
        "\n",
        _section("env as a grid", models.EnvGridSpec, ""),
        "\n",
        _legacy(),
    ]
    return "".join(parts)
