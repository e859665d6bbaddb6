"""E0 (the paper's Figure 3): the exact answer a Gaussian q over zeta = log lambda should
reach when lambda's posterior is Gamma(a, b), and the Figure 3 fit against it.

The Poisson-Exponential model of the paper's Figure 2 is conjugate: the posterior of
lambda is Gamma(1 + sum_n x_n, 1 + N), so the KL-optimal Gaussian over log lambda, and the
KL of any Gaussian to the posterior, are known in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
from scipy import special


def kl_optimal_lognormal(a: float, b: float) -> tuple[float, float]:
    """The Gaussian q(zeta) = N(mu, sigma^2) closest in KL(q || p) to the posterior of zeta =
    log lambda when lambda | x ~ Gamma(a, b) (shape, rate).

    Setting the ELBO's gradient, a mu - b exp(mu + sigma^2 / 2) + log sigma, to zero gives
    sigma = a^(-1/2) and mu = log(a / b) - 1 / (2 a).

    Returns:
        (mu, sigma).
    """
    return math.log(a / b) - 0.5 / a, a**-0.5


def kl_to_log_gamma(mu: float, sigma: float, a: float, b: float) -> float:
    """KL(q || p) in nats for q = N(mu, sigma^2) over zeta and p(zeta) the density of
    log lambda, lambda ~ Gamma(a, b): p(zeta) = b^a / Gamma(a) exp(a zeta - b e^zeta).

    KL = -H[q] - E_q[log p] with H[q] = log(sigma sqrt(2 pi e)) and
    E_q[e^zeta] = exp(mu + sigma^2 / 2).
    """
    entropy = 0.5 * math.log(2 * math.pi * math.e * sigma * sigma)
    expected_log_p = (a * math.log(b) - float(special.gammaln(a)) + a * mu
                      - b * math.exp(mu + 0.5 * sigma * sigma))
    return -entropy - expected_log_p


def transformation_table(fit: Mapping[str, float]) -> pd.DataFrame:
    """The Figure 3 fit against the exact answer, one quantity per row.

    Args:
        fit: ``mu``, ``sigma`` (ADVI's q in zeta = log lambda) and ``a``, ``b`` (the exact
            Gamma posterior's shape and rate), as ``plot_transformations.render`` returns.

    Returns:
        Columns ``symbol, quantity, value``; symbols ``a, b, mu, mu_opt, sigma, sigma_opt,
        kl, kl_min, excess_kl``.
    """
    a, b, mu, sigma = (float(fit[key]) for key in ("a", "b", "mu", "sigma"))
    mu_opt, sigma_opt = kl_optimal_lognormal(a, b)
    kl, kl_min = kl_to_log_gamma(mu, sigma, a, b), kl_to_log_gamma(mu_opt, sigma_opt, a, b)
    rows = [
        ("a", "exact posterior Gamma(a, b): shape a = 1 + sum_n x_n", a),
        ("b", "exact posterior Gamma(a, b): rate b = 1 + N", b),
        ("mu", "ADVI: mean mu of q(zeta), zeta = log lambda", mu),
        ("mu_opt", "KL-optimal mu = log(a / b) - 1 / (2a)", mu_opt),
        ("sigma", "ADVI: standard deviation sigma of q(zeta)", sigma),
        ("sigma_opt", "KL-optimal sigma = a^(-1/2)", sigma_opt),
        ("kl", "KL(q || p) of ADVI's q (nats)", kl),
        ("kl_min", "KL(q || p) of the KL-optimal q (nats)", kl_min),
        ("excess_kl", "KL(q || p) - minimum (nats)", kl - kl_min),
    ]
    return pd.DataFrame(rows, columns=["symbol", "quantity", "value"])
