"""The model registry and the four names every model module exports."""

import pytest

from advi_repro import models


@pytest.mark.parametrize("name", models.MODEL_NAMES)
def test_every_model_module_exports_the_contract(name):
    module = models.get(name)
    for attribute in ("model", "log_likelihood", "load"):
        assert callable(getattr(module, attribute))
    assert isinstance(module.SITES, tuple) and module.SITES


def test_unknown_model_name_is_named_with_the_valid_ones():
    with pytest.raises(ValueError, match="'gmmm'") as error:
        models.get("gmmm")
    for name in models.MODEL_NAMES:
        assert name in str(error.value)
