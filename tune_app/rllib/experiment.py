"""An RLlib experiment of a spec: its config and metric names in new-stack spelling, the
spec's simulations and resources as RLlib keys.
"""

from __future__ import annotations

from dataclasses import replace

from tune_app.errors import SpecError
from tune_app.rllib.code import check_code
from tune_app.rllib.translation import Translated, translate_config, translate_metric
from tune_app.spec.resolved import Experiment


def translate_experiment(  # noqa: C901
    exp: Experiment, warnings: list[str], gym_env: bool, search_path: tuple[str, ...] = ()
) -> tuple[Experiment, SpecError | None]:
    """The experiment with RLlib's legacy config keys and metric names in new-stack spelling,
    and the config's translation errors, its code values checked (`rllib.code`; the metric
    names are translated all the same, so the rest of the experiment is checked in the same
    pass)."""
    where = exp.key_path
    failed: SpecError | None = None
    try:
        translated = translate_config(exp.run, exp.config, gym_env=gym_env)
        check_code(translated.config, search_path)
    except SpecError as err:
        failed = err.under(where)
        translated = Translated(config={}, warnings=())
    config = dict(translated.config)
    config.pop("env", None)  # the EnvRef carries it
    warnings.extend(f"{where}.{w}" for w in translated.warnings)
    if exp.resources is not None and exp.resources.memory:
        raise SpecError(
            "an RLlib algorithm sizes its own processes; memory has no RLlib setting to go to",
            path=f"{where}.resources_per_trial.memory",
            suggestion="remove memory",
        )
    # The spec's simulations and resources are the algorithm's env runners and main process.
    for spec_key, value, key in (
        ("simulations", exp.simulations, "num_env_runners"),
        (
            "simulations",
            exp.simulations is not None and exp.cpu_per_simulation,
            "num_cpus_per_env_runner",
        ),
        ("resources_per_trial", exp.resources and exp.resources.cpu, "num_cpus_for_main_process"),
        ("resources_per_trial", exp.resources and exp.resources.gpu, "num_gpus_per_learner"),
    ):
        if value is None or value is False:
            continue
        if key in config and config[key] != value:
            if failed is not None:
                continue
            raise SpecError(
                f"{spec_key} sets {key} to {value:g}, but config.{key} is {config[key]}",
                path=f"{where}.{spec_key}",
                suggestion="set only one of them",
            )
        config[key] = value

    def metric(key: str, at: str) -> str:
        new, warning = translate_metric(key, f"{where}.{at}")
        if warning:
            warnings.append(warning)
        return new

    stop = {metric(k, f"stop.{k}"): v for k, v in exp.stop.items()}
    expect = exp.expect.model_copy(
        update={"metrics": {metric(k, f"expect.{k}"): v for k, v in exp.expect.metrics.items()}}
    )
    scheduler = exp.scheduler
    time_attr = getattr(scheduler, "time_attr", None)
    if time_attr:
        scheduler = scheduler.model_copy(
            update={"time_attr": metric(time_attr, "scheduler.time_attr")}
        )
    checkpoint = exp.checkpoint
    if checkpoint.checkpoint_score_attribute:
        checkpoint = checkpoint.model_copy(
            update={
                "checkpoint_score_attribute": metric(
                    checkpoint.checkpoint_score_attribute,
                    "checkpoint_config.checkpoint_score_attribute",
                )
            }
        )
    translated_exp = replace(
        exp,
        config=config if failed is None else exp.config,
        written_at=translated.written,
        stop=stop,
        expect=expect,
        metric=metric(exp.metric, "metric") if exp.metric else None,
        objectives=tuple(
            replace(o, name=metric(o.name, f"metric[{i}]")) for i, o in enumerate(exp.objectives)
        ),
        constraints=tuple(
            replace(c, name=metric(c.name, f"constraints.{c.name}")) for c in exp.constraints
        ),
        scheduler=scheduler,
        checkpoint=checkpoint,
    )
    return translated_exp, failed
