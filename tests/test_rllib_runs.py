"""RLlib specs run end to end: Ray's classic tuned-example YAMLs (tests/rllib_specs) validated
and run under --smoke unchanged, a SAC run through iterations without finished episodes, and
the real error of an algorithm that fails during set-up."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from .conftest import ROOT, refused, results_of, user_module

SPECS = ROOT / "tests" / "rllib_specs"
# Published files asking for something RLlib 2.60 cannot do, and the words of the refusal.
REFUSED = {
    "appo-cartpole.yaml": "cartpole-appo.config.vtrace: 'vtrace: False' has no equivalent",
    "appo-cartpole-fragment.yaml": "cartpole-appo.config.vtrace: 'vtrace: False' has no equiv",
}
RUNNABLE = sorted(p.name for p in SPECS.glob("*.yaml") if p.name not in REFUSED)


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("*.yaml")))
def test_published_rllib_yaml_validates_or_says_what_has_no_equivalent(cli, name):
    result = cli("validate", SPECS / name, "--smoke")
    if name in REFUSED:
        refused(result, REFUSED[name])
        return
    assert result.code == 0, result.err
    # Every legacy key warned once, none refused; a translated stop criterion says it smooths.
    assert "error" not in result.err.lower()
    if "episode_reward_mean" in (SPECS / name).read_text():
        assert (
            "read as 'env_runners/episode_return_mean_smoothed' (the mean return of the "
            "last metrics_num_episodes_for_smoothing (100) episodes" in result.err
        )


@pytest.mark.ray
@pytest.mark.e2e
@pytest.mark.parametrize("name", RUNNABLE)
def test_published_rllib_yaml_runs_under_smoke(ray_session, cli, tmp_path, name):
    spec = tmp_path / name
    shutil.copy(SPECS / name, spec)
    result = cli("run", spec, "--smoke", "-q", "--storage-path", tmp_path / "out")
    assert result.code == 0, result.err[-3000:]
    (folder,) = [p for p in (tmp_path / "out" / "smoke").iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text())
    assert set(summary["counts"]) == {"TERMINATED"}, summary["counts"]
    assert all(t["iterations"] == 2 for t in summary["trials"])
    rows = results_of(folder)
    assert rows and all(r["num_env_steps_sampled_lifetime"] > 0 for r in rows)
    for row in rows:  # no NaN reached the log: a no-episode iteration simply lacks the key
        runners = row["env_runners"]
        assert runners.get("num_episodes") or "episode_return_mean" not in runners


SAC_NO_EPISODES = """
# Tiny SAC iterations (5 env steps): most end before a CartPole episode does, so RLlib reports
# their episode return as NaN. None of that may fail the trial.
cartpole-sac:
  run: SAC
  env: CartPole-v1
  stop: {training_iteration: 30}
  config:
    # One rollout of 5 steps and one update per iteration: with fragments of 1 step, SAC made an
    # update per step, and its default min_time_s_per_iteration (1 s) kept it sampling.
    rollout_fragment_length: 5
    min_sample_timesteps_per_reporting: 5
    min_time_s_per_iteration: 0
    learning_starts: 20
    train_batch_size: 16
    metrics_smoothing_episodes: 10
"""


@pytest.mark.ray
@pytest.mark.e2e
def test_sac_does_not_fail_on_iterations_without_a_finished_episode(
    ray_session, cli, write_spec, tmp_path
):
    result = cli("run", write_spec(SAC_NO_EPISODES), "-q", "--storage-path", tmp_path / "out")
    assert result.code == 0, result.err[-3000:]
    folder = tmp_path / "out" / "cartpole-sac"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 1}
    (trial,) = summary["trials"]
    assert trial["iterations"] == 30 and trial["cause"] is None
    rows = results_of(folder)
    empty = [r for r in rows if not r["env_runners"].get("num_episodes")]
    full = [r for r in rows if r["env_runners"].get("num_episodes")]
    assert empty and full  # the run did have iterations without a finished episode
    for r in empty:
        assert "episode_return_mean" not in r["env_runners"]
    # The smoothed return carries over empty iterations once an episode has finished.
    first = min(r["training_iteration"] for r in full)
    later = [r for r in rows if r["training_iteration"] > first]
    assert all(math.isfinite(r["env_runners"]["episode_return_mean_smoothed"]) for r in later)
    # The best trial's metric is its last reported smoothed return, even when the last
    # iteration finished no episode.
    assert trial["metric"] == pytest.approx(
        later[-1]["env_runners"]["episode_return_mean_smoothed"]
    )


BROKEN_SETUP = """
text-env:
  run: PPO
  env: text_obs_env:TextObservationEnv
  stop: {training_iteration: 2, episode_reward_mean: 100}
  config: {num_workers: 0}
"""


@pytest.mark.ray
@pytest.mark.e2e
def test_an_algorithm_failing_in_set_up_shows_rllibs_error(ray_session, cli, write_spec, tmp_path):
    user_module("text_obs_env.py", tmp_path)
    junit = tmp_path / "junit.xml"
    out = tmp_path / "out"
    result = cli("run", write_spec(BROKEN_SETUP), "-q", "--storage-path", out, "--junit", junit)
    assert result.code == 1, result.err[-3000:]
    # Not "killed", and not "never reported": RLlib's own error line, without -v.
    assert "never reported" not in result.err
    summary = json.loads((out / "text-env" / "summary.json").read_text())
    (trial,) = summary["trials"]
    assert trial["cause"] not in ("killed", None)
    assert "encoder" in trial["error"].lower() or "Text" in trial["error"], trial["error"]
    assert trial["error"].splitlines()[0] in result.out
    assert trial["error"].splitlines()[0] in junit.read_text()
    analyzed = cli("analyze", out / "text-env", "--format", "json")
    assert analyzed.code == 0
    assert trial["cause"] in analyzed.out and "killed" not in analyzed.out
