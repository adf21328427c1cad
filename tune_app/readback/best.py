"""`tune_app best` and `tune_app evaluate`: a finished run's best configurations as a ready spec,
constants only.

The spec as run (the run folder's copy) is taken as written, every searched parameter replaced by
a chosen configuration's value, the searcher and scheduler dropped (one configuration: FIFO),
and each experiment renamed (`<name>-best`, or `<name>-top<rank>` for several) so its results do
not land in the tuning run's folder. A run with seeds is judged by its configurations' aggregate
over seeds (by their lower bound under `select: lcb`). With `seeds`, each experiment runs on
evaluation seeds, apart from the seeds of tuning.
"""

from __future__ import annotations

import copy
import json
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from tune_app import scoring
from tune_app.command import APP
from tune_app.errors import SpecError
from tune_app.readback import front
from tune_app.rundir import noise
from tune_app.rundir.files import new_file
from tune_app.rundir.location import RunLocation
from tune_app.rundir.lock import writer_of
from tune_app.rundir.read import KEEP_A_CHECKPOINT, ExperimentResults, read_experiment
from tune_app.rundir.records import RunRecord, TrialOutcome
from tune_app.seeds import MAX_SEEDS, SEED_KEY
from tune_app.space import place_at
from tune_app.spec.loading import read_yaml_text, spec_text
from tune_app.spec.resolve import parse

Format = Literal["yaml", "json", "overrides", "checkpoint"]
FORMATS = ("yaml", "json", "overrides", "checkpoint")
EVAL_SEED_BASE = 10_000  # evaluation seeds start here, away from the seeds a search tried
# Keys that only matter when several configurations are tried.
SEARCH_KEYS = (
    "search",
    "scheduler",
    "num_samples",
    "seed",
    "max_concurrent_trials",
    "seeds",
    "select",  # ranks several configurations; one run without seeds has none to rank
)


@dataclass(frozen=True)
class Best:
    """One chosen configuration of an experiment, and where it came from."""

    experiment: str  # the tuning run's experiment
    name: str  # the experiment that runs it: <experiment>-best or <experiment>-top<rank>
    rank: int
    trial: TrialOutcome  # its best trial
    params: dict[str, Any]  # searched dotted config path, as the spec wrote it -> value
    score: float  # the trial's score, or with seeds the configuration's aggregate
    judged: str  # how the score was taken, in words
    metric: str
    run: RunLocation  # the run folder it was read from
    checkpoint: Path | None = None  # its trial's newest checkpoint folder, if it kept one


def best_spec(
    folder: str | Path,
    seeds: int | None = None,
    top: int = 1,
    pick: str | None = None,
    evaluating: bool = False,
) -> tuple[dict[str, Any], list[Best]]:
    """The spec (as plain data) running the `top` best configurations of every experiment in
    `folder`, and where they came from; for a search of several objectives, its Pareto front,
    or the point of it `pick` names (`front.chosen`). Raises SpecError when a run has no scored
    trial, or seeds are asked of a search of several objectives (`evaluating`: by `evaluate`,
    whose seeds are its point, not an option to leave out)."""
    if seeds is not None and not 1 <= seeds <= MAX_SEEDS:
        raise SpecError(f"from 1 to {MAX_SEEDS:,} seeds, got {seeds:,}", path="--seeds")
    runs = RunLocation.open(folder)
    for run in runs:
        owner = writer_of(run)
        if owner is not None:
            print(
                f"tune_app: {run.where} is still being run ({owner.describe()}): these are the "
                "best so far and may change; run `best` again once it has ended",
                file=sys.stderr,
                flush=True,
            )
    texts = {_spec_as_run(r) for r in runs}
    if len(texts) != 1:
        raise SpecError(
            f"{folder} holds runs of {len(texts)} different spec files",
            suggestion="pass one experiment folder at a time",
        )
    spec_path = runs[0].spec
    raw = read_yaml_text(texts.pop(), spec_path)
    parsed = parse(copy.deepcopy(raw), spec_path)
    read = [read_experiment(r.local, r.where) for r in runs]
    several = [e for e in read if front.several(e.summary)]
    if seeds and several:
        objectives = ", ".join(o.name for o in several[0].summary.objectives)
        if evaluating:
            raise SpecError(
                f"{several[0].where}: evaluate judges each configuration by one aggregate score "
                f"over fresh seeds, and this run searched several objectives ({objectives})",
                suggestion=f"`{APP} best {folder}` exports the front's configurations as a spec "
                "(--pick NAME: one point); run it to see them again",
            )
        raise SpecError(
            "evaluation seeds judge a configuration by one aggregate score, and this run "
            f"searched several objectives ({objectives})",
            path="--seeds",
            suggestion="leave --seeds out: the front's configurations are exported as they ran",
        )
    records = _records(runs)
    found = [b for e in read for b in _chosen(e, top, pick, records.get(e.name))]
    if parsed.form == "app":
        out = {k: v for k, v in raw.items() if k not in (*SEARCH_KEYS, "experiments")}
        out["experiments"] = _experiments(raw["experiments"], found, seeds, records, spec_path)
    else:
        out = _experiments(raw, found, seeds, records, spec_path)
    parse(copy.deepcopy(out), Path("<best>"))  # a bug here must not reach the user's run
    return out, found


def _spec_as_run(run: RunLocation) -> str:
    """The text of the spec a run kept (`spec.yaml`), which `best` writes its spec from."""
    text = spec_text(run.spec)
    if text is None:
        raise SpecError(
            f"{run.where}: the spec as run ({run.spec.name}) cannot be read as a spec file "
            "(missing, not a regular file, too large or not UTF-8)",
            suggestion="best writes its spec from the copy a run keeps; analyze reads without it",
        )
    return text


def render(data: dict[str, Any], found: list[Best], fmt: Format) -> str:
    """The spec as YAML or JSON, the chosen values as `experiment.config.path=value` lines, or
    the chosen trials' checkpoint folders, one a line; the header and errors name the runs read."""
    source = ", ".join(dict.fromkeys(b.run.where for b in found))  # the runs read, as named
    if fmt == "checkpoint":
        missing = [b.trial.trial_id for b in found if b.checkpoint is None]
        if missing:
            raise SpecError(
                f"{source}: trial {', '.join(missing)} kept no checkpoint",
                suggestion=KEEP_A_CHECKPOINT,
            )
        return "\n".join(str(b.checkpoint) for b in found)
    if fmt == "overrides":
        # One configuration of an experiment: its values under the experiment's own name, for
        # the spec as run; several (--top, a front): each under the name it runs as, since one
        # name cannot take two values of a key.
        chosen = Counter(b.experiment for b in found)
        return "\n".join(
            f"{b.experiment if chosen[b.experiment] == 1 else b.name}.config.{path}="
            f"{json.dumps(value)}"
            for b in found
            for path, value in b.params.items()
        )
    if fmt == "json":
        return json.dumps(data, indent=2)
    head = [f"# The best configurations of {source}, as found by `{APP} best`:"]
    head += [
        f"#   {b.name}: {b.metric} = {b.score:.6g} ({b.judged}), trial {b.trial.trial_id}"
        + (f", checkpoint {b.checkpoint}" if b.checkpoint else "")
        for b in found
    ]
    return "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False).rstrip("\n")


def _chosen(
    exp: ExperimentResults, top: int, pick: str | None, record: RunRecord | None
) -> list[Best]:
    """The experiment's `top` best configurations, or for several objectives its front, each
    value at the path the spec wrote it (run.json's `written_at`: num_sgd_iter, read as
    num_epochs, keeps its name)."""
    if front.several(exp.summary):
        found = _front(exp, pick)
    elif pick is not None:
        raise SpecError(
            f"{front.PICK_OPTION} names a point of a Pareto front, and experiment "
            f"'{exp.name}' optimised one metric ({exp.metric or 'none'})",
            path=front.PICK_OPTION,
            suggestion=f"leave {front.PICK_OPTION} out: the best trial is exported",
        )
    else:
        found = _top(exp, top)
    written = record.written_at if record is not None else {}
    return [replace(b, params={written.get(k, k): v for k, v in b.params.items()}) for b in found]


def _top(exp: ExperimentResults, top: int) -> list[Best]:
    """The experiment's `top` best distinct configurations."""
    if exp.metric is None or exp.best_trial is None:
        raise SpecError(
            f"{exp.where}: no trial of experiment '{exp.name}' has a score"
            + ("" if exp.metric else " (the run has no metric)"),
            suggestion=f"see `{APP} analyze {exp.where}` for what each trial reported",
        )
    # With a seeds axis the seed is not a choice; searched as a plain config key, it is one.
    searched = [k for k in exp.searched if k != SEED_KEY or not exp.summary.seeds]
    chosen: list[tuple[dict[str, Any], float, TrialOutcome, str]] = []
    by_id = {t.trial_id: t for t in exp.trials}
    most = max((t.iterations for t in exp.trials), default=0)
    if exp.summary.seeds:
        how = f"{exp.summary.aggregate} of its seeds"
        place = {t.trial_id: n for n, t in enumerate(exp.ranked())}
        for c in exp.summary.configurations():
            if c.score is None:
                continue
            best = by_id[min(c.trial_ids, key=place.__getitem__)]
            budget = (
                f", {c.budgets_text}"
                if c.mixed_budgets
                else _stopped([by_id[i] for i in c.trial_ids], most)
            )
            judged = how + noise.chosen_by(c, exp.summary.select) + budget
            chosen.append((c.params, c.score, best, judged))
    else:
        seen = set()
        for t in exp.ranked():
            if t.score is None:
                continue
            params = {k: t.params.get(k) for k in searched}
            key = json.dumps(params, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                chosen.append(
                    (params, t.score, t, scoring.describe(exp.scope) + _stopped([t], most))
                )
    out = []
    for rank, (params, score, trial, how) in enumerate(chosen[:top], 1):
        missing = [k for k in searched if k not in params]
        if missing:
            raise SpecError(
                f"{exp.where}: the values of {', '.join(missing)} were not recorded for trial "
                f"{trial.trial_id}"
            )
        name = f"{exp.name}-best" if top == 1 else f"{exp.name}-top{rank}"
        checkpoint = exp.checkpoint(trial)
        out.append(
            Best(exp.name, name, rank, trial, params, score, how, exp.metric, exp.run, checkpoint)
        )
    return out


def _stopped(trials: list[TrialOutcome], most: int) -> str:
    """The budget a score was cut at, where a scheduler stopped the trials behind it before
    their longest peer (`analyze` marks them "(early)"): ", stopped at 2 of 8 iterations";
    else ""."""
    if not any(t.stopped_early for t in trials):
        return ""
    return f", stopped at {max(t.iterations for t in trials)} of {most} iterations"


def _front(exp: ExperimentResults, pick: str | None) -> list[Best]:
    """The front of a search of several objectives, each trial its own experiment (`-front<k>`,
    best first on the first objective), or the one point `pick` names (`-best`)."""
    chosen = front.chosen(exp.summary, pick)
    if not chosen:
        raise SpecError(
            f"{exp.where}: no trial of experiment '{exp.name}' is on the Pareto front (none "
            "reported every objective and kept every constraint)",
            suggestion=f"see `{APP} analyze {exp.where}` for what each trial reported",
        )
    first = exp.summary.objectives[0].name
    most = max((t.iterations for t in exp.trials), default=0)
    out = []
    for rank, t in enumerate(chosen, 1):
        name = f"{exp.name}-best" if pick is not None else f"{exp.name}-front{rank}"
        params = {k: t.params.get(k) for k in exp.searched}
        value = t.objectives.get(first)
        score = float(value) if value is not None else float("nan")
        judged = front.judged(t, exp.summary) + _stopped([t], most)
        out.append(Best(exp.name, name, rank, t, params, score, judged, first, exp.run))
    return out


def _records(runs: list[RunLocation]) -> dict[str, RunRecord]:
    """Each experiment's run.json, by experiment: where the spec wrote each searched key, and
    the config keys the app's layout chose, which the exported spec writes out (a single trial
    would otherwise get the layout of a single-trial search)."""
    from tune_app.rundir.write import read_run_record

    out = {}
    for run in runs:
        try:
            record = read_run_record(run)
        except SpecError:  # summary.json was read: the results stand without it
            continue
        out[record.experiment] = record
    return out


def _experiments(
    written: dict[str, Any],
    found: list[Best],
    seeds: int | None,
    records: dict[str, RunRecord],
    spec_path: Path,
) -> dict[str, Any]:
    """Each chosen configuration's experiment, as written (in `spec_path`), with its values and
    the layout it ran with, and no searcher."""
    out: dict[str, Any] = {}
    for b in found:
        if b.experiment not in written:  # a run.json or a spec.yaml of another run, or edited
            raise SpecError(
                f"holds no experiment '{b.experiment}', the experiment its run.json names",
                file=str(spec_path),
                allowed=list(written),
                suggestion="the run folder's spec.yaml and run.json must be of one run",
            )
        exp = {
            k: copy.deepcopy(v) for k, v in written[b.experiment].items() if k not in SEARCH_KEYS
        }
        config = exp.setdefault("config", {})
        if isinstance(config, dict) and b.experiment in records:
            config.update(records[b.experiment].layout)
        for path, value in b.params.items():
            if not place_at(config, path, value):
                where = f"{b.experiment}.config.{path}"
                raise SpecError(f"{where} is not in the spec as run; cannot place its value")
        if seeds:
            _check_takes_seed(b.experiment, exp.get("run"))
            if isinstance(config, dict):
                config.pop(SEED_KEY, None)  # the evaluation seeds take its place
            exp["seeds"] = [EVAL_SEED_BASE + i for i in range(seeds)]
        out[b.name] = exp
    return out


def _check_takes_seed(name: str, run: Any) -> None:
    """A registered trainable without a `seed` knob would refuse the seeds' config key."""
    from tune_app.registry import registered

    info = registered().get(str(run))
    if info is not None:
        why = f"experiment '{name}' cannot be run on evaluation seeds (--seeds)"
        info.refuse_missing_knob(SEED_KEY, why)


def evaluation_home(run: RunLocation) -> tuple[Path, str, str | None]:
    """Where `evaluate` writes its spec, the storage folder its results go to (the run's), and
    why the spec is not beside the run's (None where it is). It goes beside the spec file `run`
    was run from, so its trainable modules resolve as they did, where that file is still there
    as it was run (its text the run's copy); else in the working directory: run.json names that
    file, and a run folder received from someone must not choose where the app writes. Each
    evaluation's spec is a file of its own, made empty here: an earlier one's runs name theirs
    in run.json, and resume refuses a spec changed since its run."""
    from tune_app.rundir.write import read_run_record
    from tune_app.spec.loading import DICT_SPEC

    spec_file = Path(read_run_record(run).spec_file or "spec")  # an older run.json: ./spec
    stem = spec_file.stem if spec_file.name != DICT_SPEC else "spec"
    as_run = spec_text(run.spec)
    if as_run is not None and spec_text(spec_file) == as_run:
        return _unused(spec_file.parent / f"{stem}-evaluate.yaml"), run.parent, None
    why = (
        f"written here: {spec_file} is not the spec as run (changed, or gone); modules beside "
        "it are found when evaluate runs from its folder"
        if spec_file.name != DICT_SPEC
        else None
    )
    return _unused(Path.cwd() / f"{stem}-evaluate.yaml"), run.parent, why


def _unused(path: Path) -> Path:
    """`path`, or the first `<stem>_<n><suffix>` beside it (n = 2, 3, ...) that nothing holds
    (a link neither), numbered as a re-run's folder is, made empty by this call: created
    exclusively, so two evaluates started at once never pick one name."""
    n, candidate = 1, path
    while True:
        try:
            new_file(candidate).close()
            return candidate
        except FileExistsError:
            n += 1
            candidate = path.with_name(f"{path.stem}_{n}{path.suffix}")
