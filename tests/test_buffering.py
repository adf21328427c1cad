"""`result_buffer`: Tune's result buffering, set as its controller hands the values over
(`tune_app.ray_internals.buffering`), and what the app checks and keeps of every result."""

from __future__ import annotations

import os

import pytest

from tune_app.ray_internals import buffering

from .conftest import refused, results_of, user_module


def _fit_flood(tmp_path, results: int | None) -> list[tuple[int, int]]:
    """A plain Tuner's one trial of 300 results under `results_buffered(results)`: each result's
    (controller iteration, index), as a callback saw them."""
    from ray import tune

    seen: list[tuple[int, int]] = []

    class Seen(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            seen.append((iteration, result["index"]))

    def flood(config):
        for i in range(300):
            tune.report({"index": i})

    run_config = tune.RunConfig(
        storage_path=str(tmp_path / f"buffer{results}"), callbacks=[Seen()], verbose=0
    )
    with buffering.results_buffered(results):
        tune.Tuner(flood, run_config=run_config).fit()
    return seen


def test_tune_takes_up_to_the_buffer_per_call_and_every_result_in_order(ray_session, tmp_path):
    """Fails when a Ray release hands the buffering values to `train_buffered` otherwise: a
    call would then carry 2 results (or all 300), not 100."""
    for name in (buffering.LENGTH, buffering.MIN_TIME, buffering.MAX_TIME):
        assert name not in os.environ
    alone = _fit_flood(tmp_path, None)
    buffered = _fit_flood(tmp_path, 100)
    assert [i for _, i in alone] == list(range(300))
    assert [i for _, i in buffered] == list(range(300))
    assert len({it for it, _ in alone}) > 100  # a call for each result
    calls = [it for it, _ in buffered]
    per_call = [calls.count(it) for it in dict.fromkeys(calls)]
    assert max(per_call) == 100, per_call
    assert len(per_call) <= 5, per_call
    for name in (buffering.LENGTH, buffering.MIN_TIME, buffering.MAX_TIME):
        assert name not in os.environ  # restored after the fit


def test_a_user_setting_is_restored_after_the_fit(monkeypatch):
    monkeypatch.setenv(buffering.LENGTH, "7")
    with buffering.results_buffered(50):
        assert os.environ[buffering.LENGTH] == str(buffering.WINDOW_S)
        assert os.environ[buffering.MIN_TIME] == os.environ[buffering.MAX_TIME] == "50"
    assert os.environ[buffering.LENGTH] == "7"
    assert buffering.MIN_TIME not in os.environ
    with buffering.results_buffered(1):  # one at a time, Tune's own 1, whatever the user set
        assert os.environ[buffering.LENGTH] == "1"
    assert os.environ[buffering.LENGTH] == "7"
    with buffering.results_buffered(None):  # unset: the environment as it is
        assert os.environ[buffering.LENGTH] == "7"


ASHA_SPEC = """
e:
  run: flood:train
  metric: score
  mode: max
  result_buffer: 100
  scheduler: {type: asha, grace_period: 10, reduction_factor: 4, max_t: 300}
  config: {x: {grid_search: [0.4, 0.3, 0.2, 0.1]}, results: 300}
"""


def test_asha_with_a_buffer_logs_each_result_once_and_none_past_a_stop(
    ray_session, tmp_path, write_spec, cli, monkeypatch
):
    """Every row in results.jsonl, in order, and a trial ASHA stopped ends at a rung: the
    results its process had gathered past the stop are dropped, as Tune drops them."""
    user_module("flood.py", tmp_path)
    given = []
    real = buffering.results_buffered

    def spy(results):
        given.append(results)
        return real(results)

    monkeypatch.setattr(buffering, "results_buffered", spy)
    result = cli("run", write_spec(ASHA_SPEC), "--storage-path", tmp_path / "out", "-q")
    assert result.code == 0, result.err
    assert given == [100]
    rows: dict[str, list[tuple[int, int]]] = {}
    for row in results_of(tmp_path / "out" / "e"):
        if "index" in row:
            rows.setdefault(row["trial_id"], []).append((row["training_iteration"], row["index"]))
    assert len(rows) == 4
    ends = []
    for trial_id in sorted(rows):  # grid order: x 0.4, 0.3, 0.2, 0.1
        seen = rows[trial_id]
        assert seen == [(i + 1, i) for i in range(len(seen))]
        ends.append(len(seen))
    assert set(ends) <= {10, 40, 160, 300}, ends
    # The best (first) runs on; the last two reach rung 10 below both first trials' results.
    assert ends[0] == 300 and ends[2:] == [10, 10], ends


@pytest.mark.parametrize(
    ("setting", "path", "words"),
    [
        (
            "scheduler: {type: pbt, hyperparam_mutations: {a: [1, 2]}}",
            "e.result_buffer",
            "scheduler pbt pauses trials",
        ),
        ("scheduler: hyperband", "e.result_buffer", "scheduler hyperband pauses trials"),
        (
            "scheduler: {type: median, hard_stop: false}",
            "e.result_buffer",
            "median with hard_stop: false pauses trials",
        ),
        (
            "checkpoint_config: {checkpoint_at_end: true}",
            "e.checkpoint_config.checkpoint_at_end",
            "a trial it checkpoints (checkpoint_at_end: True)",
        ),
        (
            "checkpoint_config: {checkpoint_frequency: 5, checkpoint_at_end: false}",
            "e.checkpoint_config.checkpoint_frequency",
            "a trial it checkpoints (checkpoint_frequency: 5)",
        ),
    ],
)
def test_a_buffer_beside_what_needs_a_checkpoint_at_once_is_refused(
    cli, write_spec, tmp_path, setting, path, words
):
    user_module("class_trainables.py", tmp_path)
    # Tune's default checkpoint at a trial's end is refused beside a buffer too.
    ends = (
        ""
        if "checkpoint_config" in setting
        else "\n  checkpoint_config: {checkpoint_at_end: false}"
    )
    spec = write_spec(
        "e:\n  run: class_trainables:Counter\n  metric: score\n  mode: max\n"
        f"  result_buffer: 10\n  config: {{a: {{uniform: [0, 1]}}}}\n  {setting}{ends}\n"
    )
    refused(cli("validate", spec), words, file=spec, path=path)


def test_a_class_checkpointed_at_its_end_by_tune_s_default_is_refused_before_ray_starts(
    cli, write_spec, tmp_path
):
    """Tune checkpoints a class that saves checkpoints at each trial's end unless told not to,
    and then hands over one result a call: the buffer would do nothing, silently."""
    user_module("class_trainables.py", tmp_path)
    spec = write_spec(
        "e:\n  run: class_trainables:Counter\n  metric: score\n  mode: max\n"
        "  result_buffer: 10\n  stop: {training_iteration: 3}\n  config: {a: 1.0}\n"
    )
    refused(
        cli("validate", spec),
        "e.checkpoint_config.checkpoint_at_end: class 'class_trainables:Counter'",
        "set checkpoint_config.checkpoint_at_end: false",
    )


@pytest.mark.parametrize("value", ["0", "true", "'100'", "2.5"])
def test_a_buffer_is_a_whole_number_of_results(cli, write_spec, value):
    spec = write_spec(f"e: {{run: my_func, result_buffer: {value}}}\n")
    refused(cli("validate", spec), file=spec, path="e.result_buffer")


def test_a_buffer_of_one_is_one_at_a_time_beside_any_scheduler(cli, write_spec, tmp_path):
    user_module("class_trainables.py", tmp_path)
    spec = write_spec(
        "e:\n  run: class_trainables:Counter\n  metric: score\n  mode: max\n"
        "  result_buffer: 1\n  scheduler: hyperband\n  config: {a: {uniform: [0, 1]}}\n"
    )
    assert cli("validate", spec).code == 0


def test_validate_says_how_many_results_a_call_and_how_late(cli, write_spec, tmp_path):
    user_module("flood.py", tmp_path)
    spec = write_spec(ASHA_SPEC)
    result = cli("validate", spec)
    assert result.code == 0, result.err
    assert "up to 100 results a call, up to 2 s late (result_buffer)" in result.out
    assert "result_buffer" not in cli("validate", write_spec(ASHA_SPEC.replace("100", "1"))).out
