"""E5 and E6: diagonal Gaussian mixture, assignments summed out (Appendix J, Figure 1).

    theta ~ Dirichlet(alpha0 1_K),  mu_kd ~ N(0, sigma_mu),  sigma_kd ~ LogNormal(0, sigma_sigma),
    p(x_n | theta, mu, sigma) = sum_k theta_k prod_d N(x_nd | mu_kd, sigma_kd),  n = 1..N.

Paper: alpha0 = 10,000, sigma_mu = 0.1 (Normal scales are standard deviations), K = 10 on
1,000 images (E5) and K = 30 on 250,000 (E6); sigma_sigma = 1 is a *choice* (the text omits
it). The log likelihood expands the square so that all N x K Gaussian log densities are two
matrix products, (x * x) @ (1 / sigma^2)^T and x @ (mu / sigma^2)^T, then a logsumexp over K:
no (N, K, D) array is ever formed.
"""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import logsumexp

from advi_repro.models import Problem
from advi_repro.models._checks import require_count, require_positive
from advi_repro.models._plate import data_rows

SITES: tuple[str, ...] = ("theta", "mu", "sigma")
HELDOUT_BATCH = 8
"""Posterior draws scored together in ``log_likelihood`` (a memory/speed trade-off)."""


def example_data() -> dict[str, jax.Array | int]:
    """Eight made-up two-dimensional rows and K = 3 (for the plate diagram)."""
    rows = np.random.default_rng(0).normal(size=(8, 2))
    return {"x": jnp.asarray(rows, dtype=jnp.float32), "K": 3}


def row_log_likelihood(
    x: jax.Array, theta: jax.Array, mu: jax.Array, sigma: jax.Array
) -> jax.Array:
    """log sum_k theta_k prod_d N(x_nd | mu_kd, sigma_kd) for each row, by matrix products.

    Args:
        x: (N, D) float32 rows; theta: (K,) mixture weights; mu, sigma: (K, D).

    Returns:
        (N,) float32, nats.
    """
    precision = 1.0 / (sigma * sigma)
    scaled_mu = mu * precision
    # sum_d (x_nd - mu_kd)^2 / sigma_kd^2, expanded: (N, K)
    squared = (x * x) @ precision.T - 2.0 * (x @ scaled_mu.T) + jnp.sum(mu * scaled_mu, -1)
    log_norm = -0.5 * x.shape[-1] * math.log(2.0 * math.pi) - jnp.sum(jnp.log(sigma), -1)
    return logsumexp(jnp.log(theta) + log_norm - 0.5 * squared, axis=-1)


def model(
    x: jax.Array,
    *,
    K: int = 10,
    alpha0: float = 10_000.0,
    sigma_mu: float = 0.1,
    sigma_sigma: float = 1.0,
) -> None:
    """The joint density; the observation plate ``"data"`` runs over the N rows of x.

    Under subsampling only the B selected rows are read.

    Args:
        x: (N, D) float32 standardised colour histograms.
        K: number of mixture components.
        alpha0: Dirichlet concentration of each component.
        sigma_mu: standard deviation of the Normal prior on mu_kd.
        sigma_sigma: log-scale standard deviation of the LogNormal prior on sigma_kd.
    """
    require_count(K=K)
    require_positive(alpha0=alpha0, sigma_mu=sigma_mu, sigma_sigma=sigma_sigma)
    num_rows, dim = x.shape
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.full((K,), alpha0)))
    mu = numpyro.sample("mu", dist.Normal(0.0, sigma_mu).expand([K, dim]).to_event(2))
    sigma = numpyro.sample("sigma", dist.LogNormal(0.0, sigma_sigma).expand([K, dim]).to_event(2))
    with numpyro.plate("data", num_rows) as idx:
        (x_b,) = data_rows(idx, num_rows, x)
        numpyro.factor("x", row_log_likelihood(x_b, theta, mu, sigma))


def log_likelihood(samples: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """Pointwise log p(x_n | theta_s, mu_s, sigma_s) in nats for held-out rows.

    Args:
        samples: ``{"theta": (S, K), "mu": (S, K, D), "sigma": (S, K, D)}``.
        x: (N, D) float32 held-out rows.

    Returns:
        (S, N) float32.
    """

    def one_draw(draw: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        return row_log_likelihood(x, *draw)

    draws = (samples["theta"], samples["mu"], samples["sigma"])
    return jax.lax.map(one_draw, draws, batch_size=HELDOUT_BATCH)


def load(path: str | os.PathLike, *, seed: int, n_train: int, n_heldout: int,
         stream: bool = False) -> Problem:
    """Training and held-out rows of a float32 .npy file, read through a memory map.

    The last ``n_heldout`` rows are held out; the rows before them are the training pool.
    If ``n_train`` is the whole pool it is used in file order, else a seeded random subset
    of ``n_train`` pool rows (E5: 1,000 images chosen at random). Each part is copied once,
    straight from the memory map into a JAX array; with ``stream``, the training rows are
    not copied but stay the memory map's (an ``np.memmap``, which the ADVI runner streams
    with ``advi.stream``: data larger than memory).

    Args:
        path: .npy file, (N, D) float32 (``advi_repro.planning.datasets.simulate.gmm_standin``
        writes one).
        seed: numpy Generator seed of the training subset.
        n_train: training rows, 1..N - n_heldout.
        n_heldout: held-out rows (paper: 10,000).
        stream: keep the training rows in the memory map (needs ``n_train`` = the pool).

    Returns:
        Problem with train ``{"x": (n_train, D)}`` and heldout ``{"x": (n_heldout, D)}``.
    """
    data = np.load(path, mmap_mode="r")
    if data.ndim != 2 or data.dtype != np.float32:
        raise ValueError(f"{path}: expected an (N, D) float32 array, got {data.shape} {data.dtype}")
    num_pool = data.shape[0] - n_heldout
    if not 1 <= n_heldout < data.shape[0]:
        raise ValueError(f"n_heldout must be in 1..{data.shape[0] - 1}, got {n_heldout}")
    if not 1 <= n_train <= num_pool:
        raise ValueError(f"n_train must be in 1..{num_pool} (rows before the held-out ones), "
                         f"got {n_train}")
    if stream and n_train != num_pool:
        raise ValueError(f"stream=True reads the training rows where they are: n_train must "
                         f"be all {num_pool} rows before the held-out ones, got {n_train}")
    if n_train == num_pool:
        train_rows = data[:num_pool]
    else:
        chosen = np.random.default_rng(seed).choice(num_pool, size=n_train, replace=False)
        train_rows = data[np.sort(chosen)]
    return Problem(
        train={"x": train_rows if stream else jnp.asarray(train_rows)},
        heldout={"x": jnp.asarray(data[num_pool:])},
        num_heldout=n_heldout,
        meta={"source": os.fspath(path), "seed": seed, "n_train": n_train,
              "n_heldout": n_heldout, "dim": int(data.shape[1])},
    )
