"""The range of Ray releases the app is checked on, and the warning a Ray outside it gets."""

from __future__ import annotations

import warnings

import pytest

from tune_app.errors import SpecError
from tune_app.ray_internals import TESTED_RAY_VERSION, versions

from .conftest import refused


@pytest.mark.parametrize(
    ("version", "inside"),
    [
        pytest.param("2.54.1", False, id="below"),
        pytest.param("2.55.0", True, id="oldest"),
        pytest.param("2.55.1", True, id="oldest-patch"),
        pytest.param("2.58.1", True, id="between"),
        pytest.param("2.60.0", True, id="newest"),
        pytest.param("2.60.1rc1", True, id="newest-candidate"),
        pytest.param("2.61.0", False, id="above"),
        pytest.param("3.0.0.dev0", False, id="next-major"),
    ],
)
def test_the_checked_range_holds_both_ends_and_their_patch_releases(version, inside):
    assert versions.checked(version) is inside
    assert (versions.unchecked(version) is None) is inside


def test_the_pinned_ray_is_the_newest_checked_release():
    assert versions.release(TESTED_RAY_VERSION) == versions.NEWEST


def test_a_ray_outside_the_range_warns_with_its_own_category_and_one_line():
    with pytest.warns(versions.UncheckedRayWarning) as caught:
        versions.warn_unchecked("2.54.1")
    [one] = caught
    assert "Ray 2.54.1 is installed" in str(one.message) and "2.55 to 2.60" in str(one.message)
    assert "\n" not in str(one.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning here would raise
        versions.warn_unchecked("2.58.1")


@pytest.fixture
def unchecked_ray(monkeypatch):
    """Ray 2.61.0 "installed"; a run stops right after its start-up checks."""
    from tune_app import runner

    def stop(*args, **kwargs):
        raise SpecError("stopped before Ray starts", path="test")

    monkeypatch.setattr(versions, "installed", lambda: "2.61.0")
    monkeypatch.setattr(runner, "_run_held", stop)


# CI makes the warning an error (-W error::tune_app.UncheckedRayWarning); here it is shown.
@pytest.mark.filterwarnings("default::tune_app.UncheckedRayWarning")
@pytest.mark.parametrize("verbosity", [["-q"], [], ["-v"]], ids=["quiet", "normal", "verbose"])
def test_the_cli_prints_the_warning_once_at_every_verbosity(
    cli, unchecked_ray, tmp_path, verbosity
):
    result = cli("run", "search_spaces/grid.yaml", "--storage-path", tmp_path, *verbosity)
    assert result.code == 2, result.err
    lines = [line for line in result.err.splitlines() if "Ray 2.61.0 is installed" in line]
    assert lines == [lines[0]] and lines[0].startswith("warning: Ray 2.61.0"), result.err


@pytest.mark.filterwarnings("default::tune_app.UncheckedRayWarning")
def test_the_python_api_warns_at_verbosity_0_and_a_filter_makes_it_an_error(
    unchecked_ray, tmp_path
):
    import tune_app

    with pytest.warns(tune_app.UncheckedRayWarning, match="Ray 2.61.0"):
        with pytest.raises(SpecError, match="stopped before Ray starts"):
            tune_app.run("search_spaces/grid.yaml", storage_path=tmp_path, verbosity=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tune_app.UncheckedRayWarning)
        with pytest.raises(tune_app.UncheckedRayWarning):
            tune_app.run("search_spaces/grid.yaml", storage_path=tmp_path, verbosity=0)


@pytest.mark.parametrize(
    ("ray", "configspace", "takes"),
    [
        pytest.param("2.55.1", 1, False, id="2.55-configspace-1"),
        pytest.param("2.55.1", 0, True, id="2.55-configspace-0"),
        pytest.param("2.56.0", 1, True, id="2.56"),
        pytest.param("2.60.0", 1, True, id="2.60"),
    ],
)
def test_bohb_takes_numeric_ranges_unless_ray_2_55_meets_configspace_1(
    monkeypatch, ray, configspace, takes
):
    monkeypatch.setattr(versions, "_major", lambda package: configspace)
    assert versions.bohb_takes_ranges(ray) is takes


BOHB = """
metric: episode_return_mean
mode: max
search: bohb
experiments:
  exp:
    run: es_cartpole
    num_samples: 2
    stop: {{training_iteration: 4}}
    config:
      lr: {lr}
"""


def test_on_ray_2_55_bohb_refuses_a_numeric_range_at_validate_and_takes_a_choice(
    cli, write_spec, monkeypatch, tmp_path
):
    monkeypatch.setattr(versions, "installed", lambda: "2.55.1")
    monkeypatch.setattr(versions, "_major", lambda package: 1)  # ConfigSpace 1.x
    spec_file = write_spec(BOHB.format(lr="{loguniform: [0.01, 1.0]}"))
    refused(
        cli("validate", spec_file, "--storage-path", tmp_path / "out"),
        "Ray 2.55.1's BOHB cannot search a numeric range",
        "choice: [...]",
        "ray[tune,rllib]>=2.56",
        file=spec_file,
        path="experiments.exp.config.lr",
    )
    assert not (tmp_path / "out").exists()
    chosen = write_spec(BOHB.format(lr="{choice: [0.01, 0.1, 1.0]}"), "choice.yaml")
    assert cli("validate", chosen).code == 0
