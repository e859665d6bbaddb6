"""The models, one module each, as NumPyro models with their held-out log predictive.

A model module is the one home of everything the workflow needs to know about a model; an
experiment is a model module plus a YAML file under ``conf/experiment/`` that names it
(``model: <module>``). Nothing else lists the models: :func:`get` imports
``advi_repro.models.<name>`` and checks it against this contract, and :func:`available`
lists the modules found in this folder.

The contract, the names every model module exports (:data:`REQUIRED`):

- ``model(**train, **model_args)``: the NumPyro model; observed data are keyword arrays
  (the experiment's ``model_args`` are bound as keywords). Where the model has an observation
  axis that stochastic ADVI may subsample, it is declared with ``numpyro.plate("data", N)``
  so that ``advi.fit(..., minibatch_size=B)`` subsamples it and scales the likelihood by N/B
  (paper Section 2.6).
- ``log_likelihood(samples, **heldout) -> (S, N_heldout)``: pointwise log p(y_n | theta_s)
  in nats, for S posterior draws given as a dict of arrays with leading axis S (the output
  of ``advi.ADVIResult.sample`` or NumPyro's ``MCMC.get_samples``).
- ``load(path, *, seed, **sizes) -> Problem``: the train/held-out split from a data file
  (``seed``: ``experiment.data.seed``; ``sizes``: ``experiment.scales.<scale>.load``).
- ``SITES``: the latent sample sites, in the order the model's description lists them.
- ``example_data() -> dict``: tiny made-up data of the right shapes (the keyword arguments
  of ``model``), on which the report's model page draws the plate diagram.

and, for an experiment whose data are simulated (``data.source: simulate``):

- ``simulate(seed, **sizes) -> dict[str, numpy.ndarray]``: the arrays the data rule saves
  as an .npz (``numpy.savez``) for ``load`` to read; ``sizes`` are
  ``experiment.scales.<scale>.simulate``, and the same seed gives the same arrays.

Models know nothing about inference: the same model serves ADVI, NUTS and HMC.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any, NamedTuple


class Problem(NamedTuple):
    """A data set ready for inference and held-out scoring.

    Attributes:
        train: keyword arguments of the model (arrays), the training data.
        heldout: keyword arguments of ``log_likelihood`` (arrays), the held-out data.
        num_heldout: number of held-out observations N_heldout (the average in heldout_lpd
            runs over these).
        meta: free-form description (sizes, seed, provenance) written to ``info.json``.
    """

    train: dict[str, Any]
    heldout: dict[str, Any]
    num_heldout: int
    meta: dict[str, Any]


REQUIRED: tuple[str, ...] = ("model", "log_likelihood", "load", "SITES", "example_data")
"""The names every model module exports (the contract above)."""


def available() -> list[str]:
    """The model modules in this package's folder, sorted (helpers, ``_*.py``, left out)."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if not info.name.startswith("_"))


def check_name(name: str) -> None:
    """Checks that ``models/<name>.py`` is a model module, without importing it.

    Raises:
        ValueError: it is not; the message lists :func:`available`.
    """
    if name not in available():
        raise ValueError(f"unknown model {name!r}: there is no models/{name}.py; valid "
                         f"models: {', '.join(available())}")


def get(name: str) -> ModuleType:
    """The model module ``advi_repro.models.<name>`` (``models/<name>.py``), imported on
    first use and checked against the contract (:data:`REQUIRED`).

    Raises:
        ValueError: no module ``models/<name>.py`` (the message lists :func:`available`), or
            the module lacks a name of the contract (the message names it).
    """
    check_name(name)
    module = importlib.import_module(f"{__name__}.{name}")
    missing = [attribute for attribute in REQUIRED if not hasattr(module, attribute)]
    if missing:
        raise ValueError(f"model module models/{name}.py lacks {', '.join(missing)}: every "
                         f"model module exports {', '.join(REQUIRED)} (advi_repro.models)")
    return module


def simulator(name: str) -> Any:
    """The ``simulate`` function of model ``name``, for ``data.source: simulate``.

    Raises:
        ValueError: the model is unknown, or its module has no ``simulate``.
    """
    module = get(name)
    if not hasattr(module, "simulate"):
        raise ValueError(f"model module models/{name}.py has no simulate(seed, **sizes), which "
                         "data.source: simulate needs; add one, or give the experiment "
                         "another data.source")
    return module.simulate
