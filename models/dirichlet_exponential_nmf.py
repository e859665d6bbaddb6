"""E4: Dirichlet-Exponential factorisation of Frey faces (Appendix I, Fig. 5b and 5d).

    theta_u ~ Dirichlet(alpha0 1_K),  u = 1..U frames,
    beta_ik ~ Exponential(lambda0)  (rate),  i = 1..I pixels,
    y_ui ~ Poisson(theta_u^T beta_i);   paper: K = 10, alpha0 = 1000, lambda0 = 0.1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from advi_repro.models import _poisson_factorisation as factorisation
from advi_repro.models._checks import require_count, require_positive

SITES: tuple[str, ...] = ("theta", "beta")
log_likelihood = factorisation.log_likelihood
load = factorisation.load_frey
example_data = factorisation.example_data


def model(
    y: jax.Array,
    mask: jax.Array,
    log_y_factorial: jax.Array | None = None,
    *,
    K: int = 10,
    alpha0: float = 1000.0,
    lambda0: float = 0.1,
) -> None:
    """The joint density; the likelihood covers the training entries (``mask``) only.

    Args:
        y: (U, I) float32 counts; mask: (U, I) bool, True for training entries.
        log_y_factorial: (U, I) float32 log(y_ui!) (``load`` precomputes it) or None.
        K: number of factors; alpha0: Dirichlet concentration of each component;
        lambda0: rate of the exponential on beta_ik.
    """
    require_count(K=K)
    require_positive(alpha0=alpha0, lambda0=lambda0)
    num_frames, num_pixels = y.shape
    concentration = jnp.full((K,), alpha0)
    theta = numpyro.sample(
        "theta", dist.Dirichlet(concentration).expand([num_frames]).to_event(1)
    )
    beta = numpyro.sample("beta", dist.Exponential(lambda0).expand([num_pixels, K]).to_event(2))
    factorisation.observe(theta, beta, y, mask, log_y_factorial)

