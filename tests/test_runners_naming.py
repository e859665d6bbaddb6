"""Run names: built from settings in one place and read back there (round trips)."""

import pytest

from advi_repro.planning.naming import RunName, advi_run_name, mcmc_run_name, parse_run_name


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"preset": "stan", "family": "meanfield", "grad_samples": 1}, "advi_M1"),
    ({"preset": "stan", "family": "meanfield", "grad_samples": 10, "minibatch_size": 500},
     "advi_M10_B500"),
    ({"preset": "robust", "family": "meanfield", "grad_samples": 1}, "advi_robust_M1"),
    ({"preset": "robust", "family": "fullrank", "grad_samples": 2, "extras": ["eta0.1"]},
     "advi_robust_fullrank_M2_eta0.1"),
    ({"preset": "stan", "family": "fullrank", "grad_samples": 1, "minibatch_size": 50,
      "extras": ["init-zero", "adam"]}, "advi_fullrank_M1_B50_init-zero_adam"),
])
def test_advi_names_round_trip(kwargs, name):
    assert advi_run_name(**kwargs) == name
    parsed = parse_run_name(name)
    assert parsed == RunName("advi", kwargs["preset"], kwargs["family"], kwargs["grad_samples"],
                             kwargs.get("minibatch_size"), tuple(kwargs.get("extras", ())))
    assert parsed.is_robust == (kwargs["preset"] == "robust")


def test_mcmc_names_round_trip():
    assert mcmc_run_name("hmc", ["init-advi"]) == "hmc_init-advi"
    assert parse_run_name("hmc_init-advi") == RunName("hmc", extras=("init-advi",))
    assert parse_run_name("nuts") == RunName("nuts")
    assert not parse_run_name("nuts").is_advi


def test_names_no_run_could_have_are_errors_that_name_them():
    with pytest.raises(ValueError, match="'vi_M1'"):
        parse_run_name("vi_M1")
    with pytest.raises(ValueError, match="'advi_robust'"):
        parse_run_name("advi_robust")
    with pytest.raises(ValueError, match="without '_'"):
        advi_run_name(preset="stan", family="meanfield", grad_samples=1, extras=["a_b"])
    with pytest.raises(ValueError, match="must be one of"):
        mcmc_run_name("mala")
