"""Model modules are found, not listed: the contract every model module exports, and the
errors for a model that does not exist or lacks part of the contract."""

import sys

import numpy as np
import pytest

from advi_repro import models

PAPER_MODELS = ("dirichlet_exponential_nmf", "election88", "gamma_poisson_nmf", "gmm",
                "linreg_ard", "poisson_exponential")


def test_the_model_modules_are_found_in_the_models_folder():
    assert models.available() == sorted(PAPER_MODELS)  # helpers (_plate.py, ...) left out


@pytest.mark.parametrize("name", models.available())
def test_every_model_module_exports_the_contract(name):
    module = models.get(name)
    for attribute in ("model", "log_likelihood", "load", "example_data"):
        assert callable(getattr(module, attribute))
    assert isinstance(module.SITES, tuple) and module.SITES
    assert set(module.example_data()) <= set(module.model.__code__.co_varnames)


def test_unknown_model_name_is_named_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"'gmmm': there is no models/gmmm.py") as error:
        models.get("gmmm")
    for name in models.available():
        assert name in str(error.value)


def test_a_module_lacking_part_of_the_contract_is_refused_naming_what_it_lacks(monkeypatch):
    module = type(sys)("advi_repro.models.linreg_ard")
    module.model = module.load = lambda: None
    monkeypatch.setitem(sys.modules, "advi_repro.models.linreg_ard", module)
    with pytest.raises(ValueError, match="models/linreg_ard.py lacks log_likelihood, SITES, "
                                         "example_data"):
        models.get("linreg_ard")


def test_the_simulator_of_a_simulated_experiment_is_its_model_modules():
    arrays = models.simulator("linreg_ard")(0, num_train=5, num_heldout=2, num_features=3)
    assert arrays["X_train"].shape == (5, 3) and arrays["y_heldout"].dtype == np.float32
    with pytest.raises(ValueError, match="models/election88.py has no simulate"):
        models.simulator("election88")
