"""E3: constrained Gamma-Poisson factorisation of Frey faces (Appendix H, Fig. 5a and 5c).

    theta_u ~ K iid Gamma(1, 1), sorted: 0 < theta_u1 < ... < theta_uK,   u = 1..U frames,
    beta_ik ~ Gamma(1, 1)  (shape, rate),                               i = 1..I pixels,
    y_ui ~ Poisson(theta_u^T beta_i).

The ordering removes the scale non-identifiability (Appendix H). Stan writes it as a
``positive_ordered`` parameter with a componentwise Gamma statement; here ``theta`` is one
sample site whose distribution, ``OrderedGamma``, is the law of the order statistics of K iid
Gamma draws: density K! prod_k Gamma(theta_uk | a, b) on the ordered cone. That is Stan's
density times the constant K!, so it is proper (it can be sampled, e.g. for NUTS's
initialisation) and gives the same posterior. Its support, a ``positive_ordered_vector``, maps
to R^K by Stan's transform (cumulative exp) in ADVI and in NumPyro's samplers alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln
from numpyro.distributions import constraints
from numpyro.distributions.transforms import biject_to

from advi.transforms import CumulativeExp
from advi_repro.models import _poisson_factorisation as factorisation
from advi_repro.models._checks import require_count, require_positive

SITES: tuple[str, ...] = ("theta", "beta")
log_likelihood = factorisation.log_likelihood
load = factorisation.load_frey
example_data = factorisation.example_data


class _StanPositiveOrdered(type(constraints.positive_ordered_vector)):
    """``positive_ordered_vector`` whose ``biject_to`` is Stan's cumulative exp, so that
    NumPyro's samplers use the transform ADVI uses (:class:`advi.transforms.CumulativeExp`)."""


stan_positive_ordered = _StanPositiveOrdered()


@biject_to.register(_StanPositiveOrdered)
def _cumulative_exp(constraint: _StanPositiveOrdered) -> CumulativeExp:
    return CumulativeExp()


class OrderedGamma(dist.Distribution):
    """K iid Gamma(concentration, rate) draws in increasing order (their order statistics).

    Event shape (K,); log density sum_k log Gamma(value_k | a, b) + log K! on
    0 < value_1 < ... < value_K.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = stan_positive_ordered

    def __init__(
        self,
        concentration: float,
        rate: float,
        *,
        num_factors: int,
        batch_shape: tuple[int, ...] = (),
        validate_args: bool | None = None,
    ) -> None:
        self.concentration, self.rate = concentration, rate
        self._gamma = dist.Gamma(concentration, rate)
        super().__init__(batch_shape, (num_factors,), validate_args=validate_args)

    def sample(self, key: jax.Array, sample_shape: tuple[int, ...] = ()) -> jax.Array:
        draws = self._gamma.sample(key, sample_shape + self.batch_shape + self.event_shape)
        return jnp.sort(draws, axis=-1)

    def log_prob(self, value: jax.Array) -> jax.Array:
        num_factors = self.event_shape[0]
        return jnp.sum(self._gamma.log_prob(value), axis=-1) + gammaln(num_factors + 1.0)


def model(
    y: jax.Array,
    mask: jax.Array,
    log_y_factorial: jax.Array | None = None,
    *,
    K: int = 10,
    a0: float = 1.0,
    b0: float = 1.0,
    c0: float = 1.0,
    d0: float = 1.0,
) -> None:
    """The joint density; the likelihood covers the training entries (``mask``) only.

    Args:
        y: (U, I) float32 counts; mask: (U, I) bool, True for training entries.
        log_y_factorial: (U, I) float32 log(y_ui!) (``load`` precomputes it) or None.
        K: number of factors (paper: 10).
        a0, b0: shape and rate of the Gamma on theta_uk; c0, d0: those on beta_ik (paper: 1).
    """
    require_count(K=K)
    require_positive(a0=a0, b0=b0, c0=c0, d0=d0)
    num_frames, num_pixels = y.shape
    theta = numpyro.sample(
        "theta", OrderedGamma(a0, b0, num_factors=K, batch_shape=(num_frames,)).to_event(1)
    )
    beta = numpyro.sample("beta", dist.Gamma(c0, d0).expand([num_pixels, K]).to_event(2))
    factorisation.observe(theta, beta, y, mask, log_y_factorial)

