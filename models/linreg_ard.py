"""E1: linear regression with automatic relevance determination (paper Appendix F, Fig. 4a).

    tau ~ Gamma(1, 1),  alpha_d ~ Gamma(1, 1)  (shape, rate),  d = 1..D,
    w_d | tau, alpha_d ~ N(0, 1 / (tau alpha_d))  (variance; sd 1 / sqrt(tau alpha_d)),
    y_n | x_n, w, tau ~ N(w^T x_n, 1 / tau),  n = 1..N.

The data are simulated by ``simulate`` (Appendix F: half of the regressors have no
predictive power) and saved with ``numpy.savez(path, **arrays)``; ``load`` reads that file.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from advi_repro.models import Problem
from advi_repro.models._checks import require_count
from advi_repro.models._plate import data_rows

SITES: tuple[str, ...] = ("w", "tau", "alpha")
NOISE_PRECISION = 1.0
"""tau of the simulated regression: the noise of y_n has standard deviation 1."""


def model(X: jax.Array, y: jax.Array) -> None:
    """The joint density p(y, w, tau, alpha | X).

    Args:
        X: (N, D) float32 regressors.
        y: (N,) float32 responses; the observation plate ``"data"`` runs over the N rows.
    """
    num_rows, num_features = X.shape
    tau = numpyro.sample("tau", dist.Gamma(1.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Gamma(1.0, 1.0).expand([num_features]).to_event(1))
    w = numpyro.sample("w", dist.Normal(0.0, jax.lax.rsqrt(tau * alpha)).to_event(1))
    with numpyro.plate("data", num_rows) as idx:
        X_b, y_b = data_rows(idx, num_rows, X, y)
        numpyro.sample("y", dist.Normal(X_b @ w, jax.lax.rsqrt(tau)), obs=y_b)


def log_likelihood(samples: dict[str, jax.Array], X: jax.Array, y: jax.Array) -> jax.Array:
    """Pointwise log N(y_n | w_s^T x_n, 1 / tau_s) in nats, one matrix product for all draws.

    Args:
        samples: ``{"w": (S, D), "tau": (S,), ...}`` posterior draws.
        X: (N, D) float32 held-out regressors.
        y: (N,) float32 held-out responses.

    Returns:
        (S, N) float32.
    """
    mean = samples["w"] @ X.T
    sd = jax.lax.rsqrt(samples["tau"])[:, None]
    return dist.Normal(mean, sd).log_prob(y[None, :])


def simulate(
    seed: int, *, num_train: int = 10_000, num_heldout: int = 1_000, num_features: int = 250
) -> dict[str, np.ndarray]:
    """Regression data in which half of the regressors have no predictive power (Appendix F).

    x_nd ~ N(0, 1) iid; w_d ~ N(0, 1) for the first D // 2 regressors and w_d = 0 for the
    others; y_n = w^T x_n + e_n with e_n ~ N(0, 1 / NOISE_PRECISION). Save with
    ``numpy.savez(path, **arrays)`` for :func:`load`.

    Args:
        seed: numpy Generator seed.
        num_train, num_heldout: rows N of the training and held-out sets.
        num_features: D, the number of regressors.

    Returns:
        ``X_train (num_train, D)``, ``y_train (num_train,)``, ``X_heldout (num_heldout, D)``,
        ``y_heldout (num_heldout,)``, all float32; the truth ``w (D,)`` float32 and
        ``noise_precision ()`` float32.
    """
    require_count(num_train=num_train, num_heldout=num_heldout, num_features=num_features)
    rng = np.random.default_rng(seed)
    w = np.zeros(num_features)
    num_relevant = num_features // 2
    w[:num_relevant] = rng.normal(0.0, 1.0, num_relevant)
    X = rng.normal(0.0, 1.0, (num_train + num_heldout, num_features))
    noise = rng.normal(0.0, 1.0 / np.sqrt(NOISE_PRECISION), num_train + num_heldout)
    y = X @ w + noise
    X, y = X.astype(np.float32), y.astype(np.float32)
    return {
        "X_train": X[:num_train],
        "y_train": y[:num_train],
        "X_heldout": X[num_train:],
        "y_heldout": y[num_train:],
        "w": w.astype(np.float32),
        "noise_precision": np.float32(NOISE_PRECISION),
    }


def example_data() -> dict[str, jax.Array]:
    """Eight rows of three made-up regressors and responses (for the plate diagram)."""
    rng = np.random.default_rng(0)
    return {"X": jnp.asarray(rng.normal(size=(8, 3)), dtype=jnp.float32),
            "y": jnp.asarray(rng.normal(size=8), dtype=jnp.float32)}


def load(path: str | os.PathLike, *, seed: int | None = None) -> Problem:
    """Read a simulated data set written by ``numpy.savez(path, **simulate(...))``.

    Args:
        path: .npz file with ``X_train (N, D)``, ``y_train (N,)``, ``X_heldout (M, D)``,
            ``y_heldout (M,)``.
        seed: not used: the split is fixed by the simulation; accepted so that every
            model's ``load`` takes the same keywords.

    Returns:
        Problem with train and heldout ``{"X": (., D) float32, "y": (.,) float32}``.
    """
    with np.load(path) as arrays:
        train = {"X": arrays["X_train"], "y": arrays["y_train"]}
        heldout = {"X": arrays["X_heldout"], "y": arrays["y_heldout"]}
    for part in (train, heldout):
        if part["X"].ndim != 2 or part["X"].shape[0] != part["y"].shape[0]:
            raise ValueError(
                f"{path}: X must be (N, D) and y (N,), got {part['X'].shape} and {part['y'].shape}"
            )
    n_train, num_features = train["X"].shape
    return Problem(
        train={name: jnp.asarray(a, dtype=jnp.float32) for name, a in train.items()},
        heldout={name: jnp.asarray(a, dtype=jnp.float32) for name, a in heldout.items()},
        num_heldout=int(heldout["y"].shape[0]),
        meta={"source": os.fspath(path), "n_train": int(n_train),
              "n_heldout": int(heldout["y"].shape[0]), "num_features": int(num_features)},
    )
