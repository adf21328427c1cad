"""docs/reference/rllib.md: RLlib's algorithms, the legacy keys and what each is read as, and
the refusals with their reasons, from tune_app.rllib.tables."""

from __future__ import annotations

from docs.gen.common import HEADER, code, table
from tune_app.rllib import tables as t


def _pairs(mapping: dict, head: tuple[str, str], fmt=code) -> str:
    return table(head, [[code(k), fmt(v)] for k, v in mapping.items()])


def page() -> str:
    renamed_for = {k: f"`{path}` ({algo} only)" for k, (algo, path) in t.RENAMED_FOR.items()}
    no_op_defaults = {
        k: f"accepted (a no-op) when `{v!r}`, refused otherwise: {why}"
        for k, (v, why) in t.NO_OP_DEFAULTS.items()
    }
    stack = {k: "`true` is a no-op; `false` (the old stack) is refused" for k in t.STACK_FLAGS}
    replay = {
        k: f"accepted at its old default `{v!r}`, refused otherwise"
        for k, v in t.REPLAY_NO_OPS.items()
    }
    parts = [
        HEADER,
        "# RLlib keys\n\n",
        "Every config key of an RLlib experiment is checked against the algorithm's own config. "
        "A legacy key is carried to the new API stack with one warning; a key the new stack "
        "would silently ignore is an error saying why. `tune_app list PPO` prints every key "
        "PPO accepts.\n\n",
        "## Algorithms\n\n",
        _pairs(t.ALGORITHMS, ("run", "RLlib module")),
        "\n## Algorithms no longer in RLlib\n\nRefused, naming what took their place.\n\n",
        _pairs(t.REMOVED, ("run", "use instead"), fmt=str),
        "\n## Renamed config keys\n\nThe value is unchanged; a dotted name is a sub-key.\n\n",
        _pairs(t.RENAMED, ("legacy key", "read as")),
        "\n",
        _pairs(renamed_for, ("legacy key", "read as"), fmt=str),
        "\n## Renamed model keys\n\nSub-keys of an old `model:`, read into `model_config`.\n\n",
        _pairs(t.RENAMED_MODEL_KEYS, ("`model` key", "`model_config` key")),
        "\n## SAC's optimization keys\n\n",
        _pairs(t.SAC_OPTIMIZATION, ("`optimization` key", "read as")),
        "\n## Replay buffers\n\n",
        _pairs(t.REPLAY_BUFFERS, ("old buffer type", "new stack's buffer")),
        "\n",
        _pairs(replay, ("replay option", "what happens"), fmt=str),
        "\n## Keys that did nothing at their default\n\n",
        _pairs(no_op_defaults, ("key", "what happens"), fmt=str),
        "\n## Keys of the old stack's machinery\n\nAccepted with a warning, whatever their "
        "value; a search over one is dropped.\n\n",
        _pairs(t.NO_OPS, ("key", "why it does nothing"), fmt=str),
        "\n## API stack flags\n\n",
        _pairs(stack, ("flag", "what happens"), fmt=str),
        "\n## Result names of the old stack\n\nIn `stop`, `metric` (one or several), `constraints` "
        "and `expect`, read as the new stack's key with a warning.\n\n",
        _pairs(t.LEGACY_METRICS, ("old result key", "read as")),
        "\n",
        _pairs(t.SMOOTHED_NOTE, ("key", "what it is"), fmt=str),
    ]
    return "".join(parts)
