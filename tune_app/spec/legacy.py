"""Tune's old experiment keys and the app's key aliases: the tables of what each is read as, and
their translation to today's keys before validation, with one warning per legacy key.
"""

from __future__ import annotations

from typing import Any

from tune_app.errors import SpecError

# Tune's old experiment keys, translated with a warning: key -> the dotted key it is read as.
LEGACY_KEYS = {
    "local_dir": "storage_path",
    "checkpoint_freq": "checkpoint_config.checkpoint_frequency",
    "checkpoint_at_end": "checkpoint_config.checkpoint_at_end",
    "keep_checkpoints_num": "checkpoint_config.num_to_keep",
    "upload_dir": "storage_path",  # Ray 1.x: where results were synced to
    "repeat": "num_samples",  # Ray 0.x
    "trial_resources": "resources_per_trial",  # Ray 0.x
    "checkpoint_score_attr": "checkpoint_config.checkpoint_score_attribute",
}
ALIASES = {"resources": "resources_per_trial"}
# Tune's old experiment keys that Ray 2 has nothing for: dropped with a warning saying why.
NO_EFFECT_KEYS = {
    "sync_to_driver": "Ray 2 keeps every trial's results in storage_path; nothing is synced",
    "sync_on_checkpoint": "Ray 2 keeps every trial's results in storage_path; nothing is synced",
    "export_formats": "Ray 2's Tune exports no models; a trial's checkpoints hold what it saves",
}


def translate_legacy(raw: Any, path: str, warnings: list[str]) -> Any:  # noqa: C901
    """Rename aliases and Tune's old experiment keys, warning once for each legacy key."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    for alias, key in ALIASES.items():
        if alias in out:
            if key in out:
                raise SpecError(
                    f"both '{alias}' and '{key}' are given",
                    path=f"{path}.{alias}",
                    suggestion=f"'{alias}' is an alias of '{key}': keep one",
                )
            out[key] = out.pop(alias)
    for old, why in NO_EFFECT_KEYS.items():
        if old in out:
            out.pop(old)
            warnings.append(f"{path}.{old}: legacy Tune key with no effect: {why}")
    if "upload_dir" in out and "local_dir" in out:  # Ray 1.x: a local copy, synced to upload_dir
        out.pop("local_dir")
        warnings.append(
            f"{path}.local_dir: legacy Tune key with no effect beside upload_dir: Ray 2 keeps "
            "results in one place, storage_path (read from upload_dir)"
        )
    for old, shown in LEGACY_KEYS.items():
        if old not in out:
            continue
        value, new = out.pop(old), shown.split(".")
        target = out
        for part in new[:-1]:
            inner = target.get(part, {})
            if not isinstance(inner, dict):
                raise SpecError("must be a mapping", path=f"{path}.{part}")
            target[part] = inner = dict(inner)
            target = inner
        if new[-1] in target:
            raise SpecError(
                f"both the legacy '{old}' and '{shown}' are given",
                path=f"{path}.{old}",
                suggestion=f"keep only '{shown}'",
            )
        if old == "checkpoint_score_attr" and isinstance(value, str) and value.startswith("min-"):
            value = value[len("min-") :]
            target["checkpoint_score_order"] = "min"
        target[new[-1]] = value
        warnings.append(f"{path}.{old}: legacy Tune key, read as {shown}")
    return out
