"""docs/troubleshooting.md: the errors a new user most likely meets, each with a small spec, the
message as the app prints it (made by running the app on that spec here) and what to do."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from docs.gen.common import HEADER
from docs.gen.shell import tune_app


@dataclass(frozen=True)
class Case:
    title: str
    spec: str | None  # the spec.yaml the command reads, or None
    command: tuple[str, ...]
    advice: str


VALIDATE = ("validate", "spec.yaml")
CASES = (
    Case(
        "A misspelt key",
        "e:\n  run: my_func\n  num_sample: 4\n  config: {alpha: 0.5, beta: 1}\n",
        VALIDATE,
        "Every key is checked; the message lists the allowed keys and the nearest one. Fix the "
        "spelling. Every key is in the [spec reference](reference/spec.md).",
    ),
    Case(
        "A key RLlib's new API stack lacks",
        "e:\n  run: PPO\n  env: CartPole-v1\n  config:\n    num_env_runners: 1\n"
        "    sample_async: true\n",
        VALIDATE,
        "Old tuned examples were written for RLlib's old API stack. A key the new stack reads "
        "under another name is translated with a warning; one it would silently ignore is "
        "refused, saying why. Remove the key, or do what the message says; the "
        "[RLlib keys reference](reference/rllib.md) lists each with its reason.",
    ),
    Case(
        "An algorithm RLlib no longer has",
        "e:\n  run: A2C\n  env: CartPole-v1\n",
        VALIDATE,
        "RLlib 2.60 runs PPO, APPO, IMPALA, DQN and SAC on its new stack; the message names "
        "what took the old algorithm's place.",
    ),
    Case(
        "A trial that does not fit the machine",
        "e:\n  run: PPO\n  env: CartPole-v1\n  config:\n    num_env_runners: 4\n",
        VALIDATE,
        "A trial's bundles must fit the machine (or, with `--address`, the cluster) or it "
        "would wait forever. Give it fewer env runners or simulations, as the message says; "
        "the docs' messages are made on 2 CPUs.",
    ),
    Case(
        "A metric the trainable never reports",
        "e:\n  run: my_func\n  metric: accuracy\n  mode: max\n  config: {alpha: 0.5, beta: 1}\n",
        VALIDATE,
        "A registered trainable declares what it reports (`python -m tune_app list my_func`); "
        "use one of those keys. For your own function the keys are known only once it runs: "
        "a key no result holds as a number ends the run with exit code 2 and the same kind of "
        "message, naming what was reported instead.",
    ),
    Case(
        "A package that is not installed",
        "e:\n  run: PPO\n  env: HalfCheetah-v4\n  config:\n    num_env_runners: 1\n",
        VALIDATE,
        "Environments of gymnasium's optional families (MuJoCo, Box2D, Atari) need their "
        "package; install it as the message says, into the same venv.",
    ),
    Case(
        "A module that cannot be found",
        "e:\n  run: my_trian:train\n",
        VALIDATE,
        "`module:function` is looked up in the spec's folder, the working directory, the "
        "`PYTHONPATH` folders, then installed packages. Check the spelling and where you run "
        "from; see [Bring your own code](tutorials/own-code.md).",
    ),
    Case(
        "Search-space bounds the wrong way round",
        "e:\n  run: my_func\n  config:\n    alpha: {uniform: [1, 0.1]}\n    beta: 1\n",
        VALIDATE,
        "Write the lower bound first. The [search-space mappings](reference/space.md) give each "
        "mapping's arguments and which bounds are included.",
    ),
    Case(
        "A grid under a model-based searcher",
        "search: hyperopt\nmetric: mean_accuracy\nmode: max\nexperiments:\n  e:\n"
        "    run: my_func\n    num_samples: 8\n    config:\n"
        "      alpha: {grid_search: [0.2, 0.6]}\n      beta: {uniform: [1, 2]}\n",
        VALIDATE,
        "HyperOpt, Optuna and BOHB sample; they take no grid axes. Write `choice: [...]`, or "
        "use `search: grid` or `random`.",
    ),
    Case(
        "A resume refused",
        None,
        ("resume", "results/my_experiment"),
        "`resume` takes the folder a run wrote, `storage_path/<experiment>` (`results/` unless "
        "the spec or `--storage-path` said otherwise), or the storage folder holding several; "
        "the `run` that was interrupted printed it. A spec changed since the run is refused "
        "too, with the diff; `--force` resumes the search as it was run.",
    ),
)


def _case(case: Case) -> str:
    with tempfile.TemporaryDirectory() as folder:
        if case.spec is not None:
            (Path(folder) / "spec.yaml").write_text(case.spec)
        code, _, err = tune_app(list(case.command), Path(folder))
    assert code == 2, (case.title, code, err)
    text = f"## {case.title}\n\n"
    if case.spec is not None:
        text += f"% spec-error: the message below\n```yaml\n{case.spec}```\n\n"
    text += f"```text\n$ python -m tune_app {' '.join(case.command)}\n{err}```\n\n"
    return text + case.advice + "\n"


def page() -> str:
    intro = (
        "# Troubleshooting\n\n"
        "The errors a new user most likely meets, each with a small spec, the message exactly "
        "as the app prints it, and what to do. Every spec error is reported before Ray starts "
        "and before anything is written: one line per problem, naming the file, the key path, "
        "what is wrong and what is allowed, and exit code 2. `--debug` adds the traceback.\n\n"
    )
    return HEADER + intro + "\n".join(_case(c) for c in CASES)
