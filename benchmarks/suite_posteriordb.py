"""posteriordb's posteriors in the validation suite: NumPyro ports of Stan models with their
reference posteriors.

posteriordb (Magnusson et al., "posteriordb: testing, benchmarking and developing Bayesian
inference algorithms", 2024; github.com/stan-dev/posteriordb) pairs Stan models and data
with reference draws from long runs of Stan's NUTS. ``suite_posteriordb.json`` keeps, for each
posterior used here, its data and the means and standard deviations of its reference draws
(10 chains x 1,000 draws; the file says where each came from). Each model below is the Stan
model's density term for term: Stan's implicit flat priors are NumPyro's ``ImproperUniform``
on the same constraint, and its constrained transforms are NumPyro's, with their Jacobians.

- ``earn_height``: earnings (near 2e4) on height (near 66), flat priors: an uncentred
  predictor at a large scale (intercept and slope correlated -0.999).
- ``kidscore_momiq``: a child's test score on the mother's IQ (near 100), the noise sd
  half-Cauchy(2.5): an uncentred predictor.
- ``hmm_example``: a two-state hidden Markov model with unit-variance Gaussian emissions,
  the states summed out by the forward algorithm.
- ``garch11``: a GARCH(1,1) volatility model, beta1 bounded by 1 - alpha1.
- ``low_dim_gauss_mix``: a two-component Gaussian mixture with ordered means.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_posteriordb.json"


def _flat(name: str, constraint: Any, shape: tuple[int, ...] = ()) -> Any:
    """Stan's implicit flat prior on a parameter declared with ``constraint``."""
    import numpyro
    import numpyro.distributions as dist

    return numpyro.sample(name, dist.ImproperUniform(constraint, (), shape))


def earn_height(earn: Any, height: Any) -> None:
    """earn ~ N(beta_1 + beta_2 height, sigma), flat priors on beta and sigma > 0."""
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (2,))
    sigma = _flat("sigma", dist.constraints.positive)
    numpyro.sample("earn", dist.Normal(beta[0] + beta[1] * height, sigma), obs=earn)


def kidscore_momiq(kid_score: Any, mom_iq: Any) -> None:
    """kid_score ~ N(beta_1 + beta_2 mom_iq, sigma), sigma ~ half-Cauchy(2.5), flat beta."""
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (2,))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)


def hmm_example(y: Any) -> None:
    """Two hidden states with uniform transition rows theta1, theta2 (flat on the simplex),
    positive ordered emission means mu, mu_1 ~ N(3, 1), mu_2 ~ N(10, 1), y_t ~ N(mu_z_t, 1);
    log p(y) by the forward algorithm."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp

    theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(2)))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(2)))
    mu = _flat("mu", dist.constraints.positive_ordered_vector, (2,))
    numpyro.factor("mu_prior", dist.Normal(3.0, 1.0).log_prob(mu[0])
                   + dist.Normal(10.0, 1.0).log_prob(mu[1]))
    log_theta = jnp.log(jnp.stack([theta1, theta2]))  # [from, to]
    emission = dist.Normal(mu, 1.0).log_prob(y[:, None])  # (T, 2)

    def forward(log_alpha: Any, log_e: Any) -> tuple[Any, None]:
        return logsumexp(log_alpha[:, None] + log_theta, axis=0) + log_e, None

    log_alpha, _ = jax.lax.scan(forward, emission[0], emission[1:])
    numpyro.factor("y", logsumexp(log_alpha))


def garch11(y: Any, sigma1: Any) -> None:
    """y_t ~ N(mu, sigma_t), sigma_t^2 = alpha0 + alpha1 (y_{t-1} - mu)^2 + beta1
    sigma_{t-1}^2, sigma_1 given; flat priors on mu, alpha0 > 0, alpha1 in (0, 1) and beta1 in
    (0, 1 - alpha1). beta1 = (1 - alpha1) u, u uniform on (0, 1): Stan's density is flat in
    beta1, so log(1 - alpha1) is added for the change from u."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = _flat("mu", dist.constraints.real)
    alpha0 = _flat("alpha0", dist.constraints.positive)
    alpha1 = numpyro.sample("alpha1", dist.Uniform(0.0, 1.0))
    u = numpyro.sample("u", dist.Uniform(0.0, 1.0))
    beta1 = (1.0 - alpha1) * u
    numpyro.factor("beta1_flat", jnp.log1p(-alpha1))
    first = jnp.asarray(sigma1, y.dtype)

    def step(sigma: Any, y_prev: Any) -> tuple[Any, Any]:
        sigma = jnp.sqrt(alpha0 + alpha1 * jnp.square(y_prev - mu) + beta1 * sigma**2)
        return sigma, sigma

    _, rest = jax.lax.scan(step, first, y[:-1])
    numpyro.sample("y", dist.Normal(mu, jnp.concatenate([first[None], rest])), obs=y)


def low_dim_gauss_mix(y: Any) -> None:
    """y_n ~ theta N(mu_1, sigma_1) + (1 - theta) N(mu_2, sigma_2), mu ordered with N(0, 2)
    priors, sigma_k ~ half-N(0, 2), theta ~ Beta(5, 5)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp

    mu = _flat("mu", dist.constraints.ordered_vector, (2,))
    numpyro.factor("mu_prior", jnp.sum(dist.Normal(0.0, 2.0).log_prob(mu)))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    parts = jnp.stack([jnp.log(theta) + dist.Normal(mu[0], sigma[0]).log_prob(y),
                       jnp.log1p(-theta) + dist.Normal(mu[1], sigma[1]).log_prob(y)])
    numpyro.factor("y", jnp.sum(logsumexp(parts, axis=0)))


def _garch_quantities(draws: dict) -> np.ndarray:
    """(mu, alpha0, alpha1, beta1) from the latent sites (beta1 = (1 - alpha1) u)."""
    alpha1, u = (np.asarray(draws[s], np.float64) for s in ("alpha1", "u"))
    return np.stack([np.asarray(draws["mu"], np.float64), np.asarray(draws["alpha0"],
                     np.float64), alpha1, (1.0 - alpha1) * u], axis=-1)


def _sites(*sites: str) -> Callable[[dict], np.ndarray]:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


MODELS: dict[str, tuple[Callable[..., None], Callable[[dict], np.ndarray], int]] = {
    "earn_height": (earn_height, _sites("beta", "sigma"), 3),
    "kidscore_momiq": (kidscore_momiq, _sites("beta", "sigma"), 3),
    "hmm_example": (hmm_example, _sites("theta1", "theta2", "mu"), 4),
    "garch11": (garch11, _garch_quantities, 4),
    "low_dim_gauss_mix": (low_dim_gauss_mix, _sites("mu", "sigma", "theta"), 5),
}
"""Each posterior's model, the map from draws (a dict of site values with a leading draw
axis) to the reference's quantities in its order, (S, D) float64, and K."""


@functools.cache
def _stored() -> dict[str, Any]:
    return json.loads(DATA.read_text())["posteriors"]


def problem(name: str, make: Callable[..., Any]) -> Any:
    """The posterior ``name`` of :data:`MODELS` as ``make(model, args, quantities, mean, sd,
    dim)`` (``suite_targets``' Problem): its data as float32 arrays in the Stan data's
    order, and its reference means and sds (float64)."""
    model, quantities, dim = MODELS[name]
    stored = _stored()[name]
    args = tuple(np.asarray(v, np.float32) for v in stored["data"].values())
    return make(model, args, quantities, np.asarray(stored["mean"], np.float64),
                np.asarray(stored["sd"], np.float64), dim)
