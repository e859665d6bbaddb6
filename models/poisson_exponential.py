"""E0: Poisson counts with an exponential prior on the rate (paper Section 2.1, Figures 2-3).

    lambda ~ Exponential(1),    x_n | lambda ~ Poisson(lambda),  n = 1..N.

The paper calls the model nonconjugate, but the exponential is a Gamma(1, 1), so the
posterior is Gamma(1 + sum_n x_n, 1 + N) (``exact_posterior``): an exact reference for the
transformation zeta = log(lambda) that Figure 3 illustrates.

Data (*choice*, the paper gives none): ``load`` simulates the counts from a seed, by default
10 training and 100 held-out draws from Poisson(3). Ten counts keep the posterior skewed
enough in lambda-space for the figure.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from advi_repro.models import Problem
from advi_repro.models._checks import require_count, require_positive
from advi_repro.models._plate import data_rows

SITES: tuple[str, ...] = ("lam",)


def model(x: jax.Array) -> None:
    """The joint density p(x, lambda).

    Args:
        x: (N,) int32, the counts; the observation plate ``"data"`` runs over them.
    """
    lam = numpyro.sample("lam", dist.Exponential(1.0))
    with numpyro.plate("data", x.shape[0]) as idx:
        (x_b,) = data_rows(idx, x.shape[0], x)
        numpyro.sample("x", dist.Poisson(lam), obs=x_b)


def log_likelihood(samples: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Pointwise log Poisson(x_n | lambda_s) in nats.

    Args:
        samples: ``{"lam": (S,)}`` posterior draws.
        x: (N,) int32, held-out counts.

    Returns:
        (S, N) float32.
    """
    return dist.Poisson(samples["lam"][:, None]).log_prob(x[None, :])


def example_data() -> dict[str, jax.Array]:
    """Eight made-up counts (for the plate diagram)."""
    return {"x": jnp.asarray(np.random.default_rng(0).integers(0, 6, 8), dtype=jnp.int32)}


def exact_posterior(x: np.ndarray | jax.Array) -> tuple[float, float]:
    """The conjugate posterior p(lambda | x) = Gamma(shape, rate).

    Args:
        x: (N,) counts.

    Returns:
        (shape, rate) = (1 + sum_n x_n, 1 + N), the Gamma's shape and rate.
    """
    x = np.asarray(x)
    return 1.0 + float(x.sum()), 1.0 + float(x.shape[0])


def load(
    path: str | os.PathLike | None = None,
    *,
    seed: int,
    n_train: int = 10,
    n_heldout: int = 100,
    true_rate: float = 3.0,
) -> Problem:
    """Simulate n_train + n_heldout counts from Poisson(true_rate) with ``seed``.

    Args:
        path: must be None: this model's data are simulated, not read.
        seed: numpy Generator seed; the same seed gives the same counts.
        n_train: number of training counts N.
        n_heldout: number of held-out counts.
        true_rate: the rate lambda of the simulated counts (per observation).

    Returns:
        Problem with train ``{"x": (n_train,) int32}``, heldout ``{"x": (n_heldout,) int32}``.
    """
    if path is not None:
        raise ValueError(f"poisson_exponential simulates its data: path must be None, got {path!r}")
    require_count(n_train=n_train, n_heldout=n_heldout)
    require_positive(true_rate=true_rate)
    counts = np.random.default_rng(seed).poisson(true_rate, size=n_train + n_heldout)
    counts = jnp.asarray(counts, dtype=jnp.int32)
    return Problem(
        train={"x": counts[:n_train]},
        heldout={"x": counts[n_train:]},
        num_heldout=n_heldout,
        meta={"source": f"simulated Poisson({true_rate}) counts", "seed": seed,
              "n_train": n_train, "n_heldout": n_heldout, "true_rate": true_rate},
    )
