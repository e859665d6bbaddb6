"""The paper's models as NumPyro models, each with its held-out log predictive.

Every model module (one per paper model) exports the same four names, so that runners and
scripts treat them alike:

- ``model(**train)``: the NumPyro model; observed data are keyword arrays. Where the model
  has an observation axis that stochastic ADVI may subsample, it is declared with
  ``numpyro.plate("data", N)`` so that ``advi.fit(..., minibatch_size=B)`` subsamples it
  and scales the likelihood by N/B (paper Section 2.6).
- ``log_likelihood(samples, **heldout) -> (S, N_heldout)``: pointwise log p(y_n | theta_s)
  in nats, for S posterior draws given as a dict of arrays with leading axis S (the output
  of ``advi.ADVIResult.sample`` or NumPyro's ``MCMC.get_samples``).
- ``load(path, *, seed, **sizes) -> Problem``: the train/held-out split from a data file.
- ``SITES``: the latent sample sites, in the order the paper lists them.

``get(name)`` returns a model module by name (``MODEL_NAMES``).

Models know nothing about inference: the same model serves ADVI, NUTS and HMC.
"""

from __future__ import annotations

import importlib
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


MODEL_NAMES: tuple[str, ...] = (
    "poisson_exponential",
    "linreg_ard",
    "election88",
    "gamma_poisson_nmf",
    "dirichlet_exponential_nmf",
    "gmm",
)
"""The model modules, in the order of the paper's experiments E0 to E6."""


def get(name: str) -> ModuleType:
    """The model module called ``name`` (one of ``MODEL_NAMES``), imported on first use.

    Raises:
        ValueError: ``name`` is not a model; the message lists the valid names.
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}; valid models: {', '.join(MODEL_NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")
