"""The kind of trainable a spec's `run:` names, as one protocol: what the app asks of it.

A registered trainable, a user's function or `tune.Trainable` class, and an RLlib algorithm
answer the same questions differently; the plan, the runner and the results' readers ask the
trainable's kind and never test which kind it is. The implementations are
`tune_app.kinds.builtin` (registered, function) and `tune_app.rllib.kind` (RLlib).

A leaf module: it imports nothing of the app at run time (the types it names, for the checker
only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from tune_app.envs import EnvRef
    from tune_app.errors import SpecError
    from tune_app.resources import Machine
    from tune_app.spec.resolved import Experiment


@dataclass(frozen=True)
class Layout:
    """How a kind laid out its trials' parallel work for the search, and why: printed by
    `validate` and `run`, kept in run.json, and written into the spec `best` exports."""

    chosen: dict[str, Any] = field(default_factory=dict)  # config keys the app set
    line: str = ""  # one line: the layout, trials at once, the reason (`layout_line`)
    why: str = ""  # the reason, in a few words
    by_app: bool = False  # the app chose it (not RLlib's defaults kept): its idle CPUs are said


class TrainableKind(Protocol):
    """A kind of trainable, holding what `run:` resolved to (without executing user code)."""

    # ---- traits -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The kind in messages: "registered", "function" or "rllib"."""
        ...

    @property
    def describe(self) -> str:
        """What `run:` names, for validate's plan: "registered: <doc>", "module:function",
        "RLlib algorithm"."""
        ...

    @property
    def default_metric(self) -> tuple[str | None, Literal["min", "max"] | None]:
        """The metric and mode a spec that names none gets; (None, None) when it declares none.
        The mode applies only when the metric is the default one."""
        ...

    @property
    def declared_metrics(self) -> tuple[str, ...]:
        """Result keys it declares it reports, beyond Tune's own (TensorBoard's HParams table)."""
        ...

    @property
    def reuses_actors(self) -> bool:
        """Whether a trial's process may serve the next trial, should the loaded trainable reset
        cleanly (an RLlib algorithm cannot reset its env runners to a new config)."""
        ...

    @property
    def sizes_own_placement(self) -> bool:
        """Whether its class sizes each trial's placement group from the config (RLlib's
        `default_resource_request`); otherwise the runner gives Tune the plan's bundles."""
        ...

    @property
    def reports_late(self) -> bool:
        """Whether some result keys appear only after a while (RLlib's episode and evaluation
        groups), so the stopper does not require them within its grace (`tuner.REPORT_GRACE`
        results)."""
        ...

    @property
    def frequent_state_saves(self) -> bool:
        """Whether Tune may save its experiment state every second; False keeps Tune's "auto"
        (RLlib's large configs make each save cost the trials' CPU)."""
        ...

    @property
    def user_modules(self) -> tuple[str, ...]:
        """The user's modules it imports (shipped to a cluster's nodes); () for the app's own."""
        ...

    @property
    def search_path(self) -> tuple[str, ...]:
        """The folders its user modules are imported from."""
        ...

    def code_modules(self, exp: Experiment) -> tuple[str, ...]:
        """Every module of user code a trial of `exp` imports by name: `user_modules`, and the
        modules its config names as code (RLlib's callbacks, connectors)."""
        ...

    # ---- the plan: checked before Ray starts; paths in errors are the spec file's ----------------

    def env(self, exp: Experiment, spec_dir: Path, warnings: list[str]) -> EnvRef | None:
        """The experiment's `env:` checked and resolved, for a trainable that makes its env
        itself; None where there is none, or where the trainable takes the text as written."""
        ...

    def translate(
        self, exp: Experiment, warnings: list[str], env: EnvRef | None
    ) -> tuple[Experiment, SpecError | None]:
        """The experiment with legacy keys and metric names in today's spelling (RLlib's), and
        the error of a config that cannot be translated; the experiment itself for most."""
        ...

    def smoke_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The config of a `--smoke` run (grid axes already cut): the trainable's smoke
        overrides for keys the spec does not search, and any caps on sizes."""
        ...

    def check_reported(self, exp: Experiment, keys: list[tuple[str, str]]) -> None:
        """Refuse result keys (`(where, key)`, where relative to the experiment) it never
        reports: a stop, metric or time_attr key that is never reported never stops or ranks."""
        ...

    def check_config(self, exp: Experiment) -> None:
        """Refuse config keys it does not read, values of the wrong type, required keys left out."""
        ...

    def check_checkpoint_keys(self, exp: Experiment) -> None:
        """Refuse what Tune's checkpoints cannot do with it (`saving.check_saving`: its keys,
        a scheduler that pauses, a result buffer), as far as it is known before import."""
        ...

    def check_population(self, exp: Experiment, warnings: list[str]) -> None:
        """For PBT and PB2 (which copy checkpoints and mutate config keys): refuse a trainable
        that saves no checkpoints or a mutated key it does not read; warn where not known."""
        ...

    def check_seeds(self, exp: Experiment) -> None:
        """For the seeds axis, which passes each seed as config.seed: refuse if it reads none."""
        ...

    def layout(
        self, exp: Experiment, trials: int, machine: Machine
    ) -> tuple[Experiment, Layout | None]:
        """The experiment with the parallel-work keys the spec left out chosen for a search of
        `trials` trials on `machine` (its part of the machine: the spec's other experiments
        run at the same time), with that layout said (RLlib's env runners and envs); the
        experiment itself and None for a kind that chooses nothing."""
        ...

    def layout_line(self, exp: Experiment, layout: Layout, at_once: int, machine: Machine) -> str:
        """`layout` said in one line for `exp` as it runs (shrunk by `--smoke`) on `machine`
        (its part), `at_once` of its trials at the same time: the count the plan says too."""
        ...

    def bundles(
        self,
        exp: Experiment,
        written: Experiment,
        env: EnvRef | None,
        machine: Machine,
        library_checks: bool,
    ) -> tuple[dict[str, float], ...]:
        """A trial's placement group, head bundle first, refused if it can never run on
        `machine` (`resources.misfit`: any resource, any node, or nothing reserved).
        `written` is the experiment as the spec wrote it (messages name its keys);
        `library_checks` has the trainable's own library (RLlib) check the config too."""
        ...

    # ---- the run --------------------------------------------------------------------------------

    def load(self) -> Any:
        """What Tune runs (a function or a Trainable class), imported on the driver only."""
        ...

    def check_loaded(self, exp: Experiment, trainable: Any) -> None:
        """What only the imported trainable tells (`check_checkpoint_keys` where its source did
        not show it). Paths are relative to the experiment."""
        ...

    def tune_space(self, space: dict[str, Any]) -> dict[str, Any]:
        """Tune's param_space from the config in Tune's domains (RLlib's private keys renamed);
        `config_keys.restore_private_keys` reads a trial's config back."""
        ...

    # ---- the results ----------------------------------------------------------------------------

    def missing_key_note(self, where: str, key: str, seen: set[str], episodes: float) -> str | None:
        """Why a stop or metric key no trial reported had no chance to be (no episode finished,
        no evaluation ran), or None: then the key is missing, and the search was wrong."""
        ...
