"""Everyday models in the validation suite: what a user writes in NumPyro, on simulated data.

None of these was used to choose a default. Each is written as a NumPyro user would write it
(centred or non-centred as its textbook does, NumPy on the data where that is natural), on
data simulated once and kept in ``suite_models.json`` with the reference means and sds
(NumPyro's NUTS in float64, 4 chains x 5,000 draws after 5,000 warm-up, target_accept
0.95; the Dirichlet-multinomial's are exact). ``python benchmarks/suite_models.py``
simulates the data and runs the references again (minutes), and rewrites the file.

- ``dirichlet_multinomial``: counts over 6 categories (one zero) with a flat Dirichlet
  prior; the model takes ``int(counts.sum())`` of its data (a concrete value), and the
  posterior is Dirichlet(1 + counts), exactly.
- ``beta_binomial``: 71 binomial experiments with rates theta_j ~ Beta(phi kappa, (1 - phi)
  kappa), phi ~ U(0, 1), kappa ~ Pareto(1, 0.5) (Gelman et al. 2013, Section 5.3's prior
  p(alpha, beta) ~ (alpha + beta)^(-5/2) in these coordinates, kept proper).
- ``ordered_logistic``: four ordered categories on one predictor, cutpoints with an ordered
  transform.
- ``student_t_regression``: a line through heavy-tailed noise (t with 3 degrees of freedom),
  the degrees of freedom unknown (Gamma(2, 0.1)).
- ``weibull_survival``: Weibull times with a log-linear scale, 100 subjects with random
  censoring (the censored ones' log survival through ``numpyro.factor``).
- ``logistic_regression_wide``: 50 predictors, 100 rows, N(0, 1) priors.
- ``poisson_glmm``: counts with one log-normal effect per observation, non-centred (100
  effects and their sd).
- ``stochastic_volatility``: 150 returns, log volatility an AR(1) by ``jax.lax.scan``,
  non-centred; compared on (mu, phi, s).
- ``correlated_normal``: 100 draws of a 3-vector, its correlation matrix LKJ(2) by its
  Cholesky factor (NumPyro's ``LKJCholesky``: the ``corr_cholesky`` constraint); compared
  on (mu, sigma) and the three correlations (added 2026-11-30, with ``python
  benchmarks/suite_models.py correlated_normal``, which leaves the other models' entries).

Added 2026-11-30 as a holdout (written, simulated and their references run before any fit
of them; no default changed after):

- ``horseshoe_regression``: 100 rows, 25 predictors, 3 non-zero coefficients, the
  regularised horseshoe of Piironen & Vehtari (2017) (global scale's prior scaled for 3
  expected non-zero, a Student-t(4, 0, 2) slab), non-centred; compared on the 25
  coefficients and the noise sd.
- ``zero_inflated_poisson``: 200 counts, 30% structural zeros, a log-linear rate
  (NumPyro's ``ZeroInflatedPoisson``).
- ``gaussian_mixture``: 300 draws of a three-component normal mixture, ordered means,
  Dirichlet weights (``MixtureSameFamily``: the simplex and ordered transforms together).
- ``logistic_separation``: 60 rows whose first predictor separates the classes completely,
  N(0, 2.5^2) priors (Gelman et al. 2008's scale): a skewed posterior that the likelihood
  alone would not bound.
- ``change_point``: 100 yearly Poisson counts whose rate drops once, the switch year summed
  out (uniform over the 100 years, rate ``early`` before it and ``late`` from it on).
- ``errors_in_variables``: a regression on a predictor observed with known noise sd 0.5,
  the 100 true values latent and centred on a normal population.
- ``softmax_regression``: 200 rows, 3 classes on 4 predictors, the first class the
  reference (10 coefficients).

A second holdout of seven and a third of six, added 2026-11-30 in the same way, are
written in :mod:`suite_holdout`, and a fourth of seven, a fifth of five and a sixth of
five, added later the same day, in :mod:`suite_fourth`, :mod:`suite_large` and
:mod:`suite_sixth`, a seventh of seven in :mod:`suite_seventh`, and an eighth of six
(2026-12-01) in :mod:`suite_eighth`; all are registered
here (``python benchmarks/suite_models.py NAME ...`` computes the named models' entries).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np
import suite_eighth
import suite_fourth
import suite_holdout
import suite_large
import suite_seventh
import suite_sixth

DATA = Path(__file__).resolve().parent / "suite_models.json"
REFERENCE = "NumPyro NUTS float64, 4 x 5,000 draws (5,000 warm-up), target_accept 0.95"


def dirichlet_multinomial(counts: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    theta = numpyro.sample("theta", dist.Dirichlet(jnp.ones(counts.shape[0])))
    numpyro.sample("y", dist.Multinomial(int(counts.sum()), theta), obs=counts)


def beta_binomial(n: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    phi = numpyro.sample("phi", dist.Uniform(0.0, 1.0))
    kappa = numpyro.sample("kappa", dist.Pareto(1.0, 0.5))
    with numpyro.plate("experiments", n.shape[0]):
        theta = numpyro.sample("theta", dist.Beta(phi * kappa, (1.0 - phi) * kappa))
        numpyro.sample("y", dist.Binomial(n, theta), obs=y)


def ordered_logistic(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import OrderedTransform

    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    c = numpyro.sample("c", dist.TransformedDistribution(
        dist.Normal(0.0, 5.0).expand([3]).to_event(1), OrderedTransform()))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.OrderedLogistic(b * x, c), obs=y)


def student_t_regression(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 10.0))
    b = numpyro.sample("b", dist.Normal(0.0, 10.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    nu = numpyro.sample("nu", dist.Gamma(2.0, 0.1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.StudentT(nu, a + b * x, sigma), obs=y)


def weibull_survival(x: Any, t: Any, event: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    k = numpyro.sample("k", dist.Gamma(2.0, 1.0))
    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    scale = jnp.exp(a + b * x)
    with numpyro.plate("subjects", x.shape[0]):
        died = dist.Weibull(scale, k).log_prob(t)
        numpyro.factor("t", jnp.where(event > 0, died, -((t / scale) ** k)))


def logistic_regression_wide(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ b), obs=y)


def poisson_glmm(y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    s = numpyro.sample("s", dist.HalfNormal(2.0))
    with numpyro.plate("rows", y.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Poisson(jnp.exp(mu + s * z)), obs=y)


def stochastic_volatility(y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    s = numpyro.sample("s", dist.HalfNormal(1.0))
    with numpyro.plate("times", y.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))

    def step(h: Any, z_t: Any) -> tuple[Any, Any]:
        h = mu + phi * (h - mu) + s * z_t
        return h, h

    _, h = jax.lax.scan(step, mu, z)
    numpyro.sample("y", dist.Normal(0.0, jnp.exp(h / 2)), obs=y)


def correlated_normal(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    dim = y.shape[1]
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0).expand([dim]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([dim]).to_event(1))
    corr_cholesky = numpyro.sample("L_corr", dist.LKJCholesky(dim, 2.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.MultivariateNormal(mu, scale_tril=sigma[:, None]
                                                    * corr_cholesky), obs=y)


def horseshoe_regression(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    rows, num_features = x.shape
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    # the regularised horseshoe (Piironen & Vehtari 2017): 3 of the coefficients expected
    # non-zero, a Student-t(4, 0, 2) slab
    tau = numpyro.sample("tau", dist.HalfCauchy(1.0)) * 3 / (num_features - 3) * sigma / (
        rows**0.5)
    c2 = numpyro.sample("c2", dist.InverseGamma(2.0, 8.0))
    with numpyro.plate("features", num_features):
        lam = numpyro.sample("lambda", dist.HalfCauchy(1.0))
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
    lam_tilde = jnp.sqrt(c2 * lam**2 / (c2 + tau**2 * lam**2))
    with numpyro.plate("rows", rows):
        numpyro.sample("y", dist.Normal(x @ (tau * lam_tilde * z), sigma), obs=y)


def zero_inflated_poisson(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    gate = numpyro.sample("gate", dist.Beta(1.0, 1.0))
    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.ZeroInflatedPoisson(gate, jnp.exp(a + b * x)), obs=y)


def gaussian_mixture(y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import OrderedTransform

    weights = numpyro.sample("weights", dist.Dirichlet(jnp.ones(3)))
    locs = numpyro.sample("locs", dist.TransformedDistribution(
        dist.Normal(0.0, 10.0).expand([3]).to_event(1), OrderedTransform()))
    scales = numpyro.sample("scales", dist.HalfNormal(2.0).expand([3]).to_event(1))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(weights),
                                                   dist.Normal(locs, scales)), obs=y)


def logistic_separation(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=a + x @ b), obs=y)


def change_point(y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    early = numpyro.sample("early", dist.Exponential(0.5))
    late = numpyro.sample("late", dist.Exponential(0.5))
    # the switch year s (uniform over the T years) summed out: y_t ~ Poisson(early) for t < s
    before = jnp.concatenate([jnp.zeros(1), jnp.cumsum(dist.Poisson(early).log_prob(y))])
    after = jnp.cumsum(dist.Poisson(late).log_prob(y)[::-1])[::-1]
    after = jnp.concatenate([after, jnp.zeros(1)])
    numpyro.factor("y", jax.nn.logsumexp(before[:-1] + after[:-1]) - jnp.log(y.shape[0]))


def errors_in_variables(x_obs: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu_x = numpyro.sample("mu_x", dist.Normal(0.0, 5.0))
    s_x = numpyro.sample("s_x", dist.HalfNormal(3.0))
    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("rows", y.shape[0]):
        x = numpyro.sample("x", dist.Normal(mu_x, s_x))
        numpyro.sample("x_obs", dist.Normal(x, 0.5), obs=x_obs)
        numpyro.sample("y", dist.Normal(a + b * x, sigma), obs=y)


def softmax_regression(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    num_classes = 3
    a = numpyro.sample("a", dist.Normal(0.0, 5.0).expand([num_classes - 1]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0).expand([x.shape[1], num_classes - 1])
                       .to_event(2))
    logits = jnp.concatenate([jnp.zeros((x.shape[0], 1)), a + x @ b], axis=1)
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Categorical(logits=logits), obs=y)


CORRELATION = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]])
"""``correlated_normal``'s simulated correlation matrix (sds 1, 2, 0.5; means 0, 1, -1)."""


def _simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` (the model's arguments by name, in its order)."""
    if name in suite_holdout.MODELS:
        return suite_holdout.simulate(name, rng)
    if name in suite_fourth.MODELS:
        return suite_fourth.simulate(name, rng)
    if name in suite_large.MODELS:
        return suite_large.simulate(name, rng)
    if name in suite_sixth.MODELS:
        return suite_sixth.simulate(name, rng)
    if name in suite_seventh.MODELS:
        return suite_seventh.simulate(name, rng)
    if name in suite_eighth.MODELS:
        return suite_eighth.simulate(name, rng)
    if name == "dirichlet_multinomial":
        return {"counts": [0.0, 1.0, 5.0, 30.0, 60.0, 4.0]}
    if name == "beta_binomial":
        n = rng.integers(14, 50, 71)
        return {"n": n.tolist(), "y": rng.binomial(n, rng.beta(2.0, 13.0, 71)).tolist()}
    x = rng.standard_normal(100 if name != "ordered_logistic" else 200)
    if name == "ordered_logistic":
        latent = 1.2 * x + rng.logistic(size=x.size)
        return {"x": x.tolist(), "y": np.digitize(latent, [-1.0, 0.5, 2.0]).tolist()}
    if name == "student_t_regression":
        return {"x": x.tolist(), "y": (1.0 + 2.0 * x + rng.standard_t(3, x.size)).tolist()}
    if name == "weibull_survival":
        t = np.exp(1.0 + 0.4 * x) * rng.weibull(1.5, x.size)
        censor = rng.exponential(4.0, x.size)
        return {"x": x.tolist(), "t": np.minimum(t, censor).tolist(),
                "event": (t <= censor).astype(float).tolist()}
    if name == "logistic_regression_wide":
        design = rng.standard_normal((100, 50))
        p = 1.0 / (1.0 + np.exp(-design @ (0.5 * rng.standard_normal(50))))
        return {"x": design.tolist(), "y": (rng.random(100) < p).astype(float).tolist()}
    if name == "poisson_glmm":
        return {"y": rng.poisson(np.exp(1.0 + 0.8 * x)).astype(float).tolist()}
    if name in HOLDOUT:
        return _simulate_holdout(name, rng)
    if name == "correlated_normal":
        cov = np.outer([1.0, 2.0, 0.5], [1.0, 2.0, 0.5]) * CORRELATION
        return {"y": rng.multivariate_normal([0.0, 1.0, -1.0], cov, 100).tolist()}
    log_vol = np.zeros(150)
    log_vol[0] = -1.0
    for t in range(1, 150):
        log_vol[t] = -1.0 + 0.95 * (log_vol[t - 1] + 1.0) + 0.25 * rng.standard_normal()
    return {"y": (np.exp(log_vol / 2) * rng.standard_normal(150)).tolist()}


def _simulate_holdout(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of a model of :data:`HOLDOUT`, from ``rng`` after :func:`_simulate` drew its
    predictor (as when these branches were written in it, so the stored data are the
    same)."""
    if name == "horseshoe_regression":
        design = rng.standard_normal((HORSESHOE_ROWS, 25))
        beta = np.zeros(25)
        beta[:3] = [3.0, -2.0, 1.5]
        return {"x": design.tolist(),
                "y": (design @ beta + rng.standard_normal(HORSESHOE_ROWS)).tolist()}
    if name == "zero_inflated_poisson":
        x = rng.standard_normal(200)
        counts = rng.poisson(np.exp(0.5 + 0.7 * x)) * (rng.random(200) >= 0.3)
        return {"x": x.tolist(), "y": counts.astype(float).tolist()}
    if name == "gaussian_mixture":
        component = rng.choice(3, 300, p=[0.3, 0.5, 0.2])
        locs, scales = np.array([-3.0, 0.0, 4.0]), np.array([1.0, 0.7, 1.5])
        return {"y": (locs[component] + scales[component] * rng.standard_normal(300)).tolist()}
    if name == "logistic_separation":
        design = rng.standard_normal((60, 2))
        return {"x": design.tolist(), "y": (design[:, 0] > 0).astype(float).tolist()}
    if name == "change_point":
        rates = np.where(np.arange(100) < 40, 3.0, 1.0)
        return {"y": rng.poisson(rates).astype(float).tolist()}
    if name == "errors_in_variables":
        x = 1.0 + rng.standard_normal(100)
        return {"x_obs": (x + 0.5 * rng.standard_normal(100)).tolist(),
                "y": (0.5 + 1.5 * x + rng.standard_normal(100)).tolist()}
    assert name == "softmax_regression", name
    design = rng.standard_normal((200, 4))
    logits = np.concatenate([np.zeros((200, 1)), design @ rng.standard_normal((4, 2))], 1)
    p = np.exp(logits - logits.max(1, keepdims=True))
    u = rng.random(200)[:, None]
    return {"x": design.tolist(),
            "y": (u > np.cumsum(p / p.sum(1, keepdims=True), 1)).sum(1).tolist()}


def _sites(*sites: str) -> Callable[[dict], np.ndarray]:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def _correlations(draws: dict) -> np.ndarray:
    """(mu (3), sigma (3), R_21, R_31, R_32) from the latent sites, R = L L^T."""
    chol = np.asarray(draws["L_corr"], np.float64)
    corr = chol @ np.swapaxes(chol, -1, -2)
    return np.concatenate([_sites("mu", "sigma")(draws),
                           np.stack([corr[:, 1, 0], corr[:, 2, 0], corr[:, 2, 1]], -1)], -1)


HORSESHOE_ROWS = 100
"""Rows of ``horseshoe_regression``'s data (its global scale's prior is scaled by them)."""


def horseshoe_quantities(draws: dict) -> np.ndarray:
    """(beta (25), sigma): the coefficients the regularised horseshoe builds."""
    sigma, tau, c2 = (np.asarray(draws[s], np.float64)[:, None] for s in ("sigma", "tau", "c2"))
    lam = np.asarray(draws["lambda"], np.float64)
    tau = tau * 3 / (lam.shape[1] - 3) * sigma / HORSESHOE_ROWS**0.5
    beta = tau * np.sqrt(c2 * lam**2 / (c2 + tau**2 * lam**2)) * np.asarray(draws["z"])
    return np.concatenate([beta, sigma], -1)


MODELS: dict[str, tuple[Callable[..., None], Callable[[dict], np.ndarray], int]] = {
    "dirichlet_multinomial": (dirichlet_multinomial, _sites("theta"), 5),
    "beta_binomial": (beta_binomial, _sites("phi", "kappa", "theta"), 73),
    "ordered_logistic": (ordered_logistic, _sites("b", "c"), 4),
    "student_t_regression": (student_t_regression, _sites("a", "b", "sigma", "nu"), 4),
    "weibull_survival": (weibull_survival, _sites("k", "a", "b"), 3),
    "logistic_regression_wide": (logistic_regression_wide, _sites("b"), 50),
    "poisson_glmm": (poisson_glmm, _sites("mu", "s"), 102),
    "stochastic_volatility": (stochastic_volatility, _sites("mu", "phi", "s"), 153),
    "correlated_normal": (correlated_normal, _correlations, 9),
    "horseshoe_regression": (horseshoe_regression, horseshoe_quantities, 53),
    "zero_inflated_poisson": (zero_inflated_poisson, _sites("gate", "a", "b"), 3),
    "gaussian_mixture": (gaussian_mixture, _sites("weights", "locs", "scales"), 8),
    "logistic_separation": (logistic_separation, _sites("a", "b"), 3),
    "change_point": (change_point, _sites("early", "late"), 2),
    "errors_in_variables": (errors_in_variables, _sites("mu_x", "s_x", "a", "b", "sigma"), 105),
    "softmax_regression": (softmax_regression, _sites("a", "b"), 10),
    **suite_holdout.MODELS,
    **suite_fourth.MODELS,
    **suite_large.MODELS,
    **suite_sixth.MODELS,
    **suite_seventh.MODELS,
    **suite_eighth.MODELS,
}
"""Each model, the map from draws (site values with a leading draw axis) to the compared
quantities, (S, D) float64, and K; the second and third holdouts' from
:mod:`suite_holdout`, the fourth's from :mod:`suite_fourth`, the fifth's from
:mod:`suite_large`, the sixth's from :mod:`suite_sixth`, the seventh's from
:mod:`suite_seventh`, the eighth's from :mod:`suite_eighth`."""

HOLDOUT = ("horseshoe_regression", "zero_inflated_poisson", "gaussian_mixture",
           "logistic_separation", "change_point", "errors_in_variables", "softmax_regression")
"""The models added as a holdout on 2026-11-30 (module docstring)."""

INTEGER_DATA = {("ordered_logistic", "y"), ("softmax_regression", "y"),
                *suite_holdout.INTEGER_DATA, *suite_fourth.INTEGER_DATA,
                *suite_large.INTEGER_DATA, *suite_sixth.INTEGER_DATA,
                *suite_seventh.INTEGER_DATA, *suite_eighth.INTEGER_DATA}
"""Arguments passed as int32 (the others float32)."""


FILES = (DATA, suite_large.DATA, suite_sixth.DATA, suite_seventh.DATA, suite_eighth.DATA)
"""Where the models' data and references are stored (each file under 1 MiB)."""


def _file(name: str) -> Path:
    """The file of :data:`FILES` that stores model ``name``: the fifth to eighth holdouts'
    own, else :data:`DATA`."""
    for module in (suite_large, suite_sixth, suite_seventh, suite_eighth):
        if name in module.MODELS:
            return module.DATA
    return DATA


@functools.cache
def _stored() -> dict[str, Any]:
    return {name: model for path in FILES if path.exists()
            for name, model in json.loads(path.read_text())["models"].items()}


def data(name: str) -> dict[str, Any]:
    """The stored data of model ``name`` (its arguments by name, in its order, as lists)."""
    return _stored()[name]["data"]


def _arguments(name: str, data: dict[str, Any]) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, np.int32 if (name, k) in INTEGER_DATA else np.float32)
                 for k, v in data.items())


def problem(name: str, make: Callable[..., Any]) -> Any:
    """The model ``name`` of :data:`MODELS` on its stored data as ``make(model, args,
    quantities, mean, sd, dim)`` (``suite_targets``' Problem), the reference means and sds
    float64."""
    model, quantities, dim = MODELS[name]
    stored = _stored()[name]
    return make(model, _arguments(name, data(name)), quantities,
                np.asarray(stored["mean"], np.float64), np.asarray(stored["sd"], np.float64),
                dim)


def _reference(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """Means and sds of the compared sites: exact for the Dirichlet-multinomial, else
    NumPyro's NUTS in float64 (:data:`REFERENCE`)."""
    if name == "dirichlet_multinomial":
        alpha = np.asarray(data["counts"]) + 1.0
        mean = alpha / alpha.sum()
        return {"mean": mean.tolist(), "sd": np.sqrt(mean * (1 - mean) / (alpha.sum() + 1))
                .tolist(), "method": "exact: Dirichlet(1 + counts)"}
    import jax
    from numpyro.infer import MCMC, NUTS

    model, quantities, _ = MODELS[name]
    with jax.enable_x64(True):
        args = tuple(np.asarray(a, np.float64) if a.dtype == np.float32 else a
                     for a in _arguments(name, data))
        mcmc = MCMC(NUTS(model, target_accept_prob=0.95), num_warmup=5000, num_samples=5000,
                    num_chains=4, chain_method="sequential", progress_bar=False)
        mcmc.run(jax.random.PRNGKey(0), *args, extra_fields=("diverging",))
        flat = quantities(jax.device_get(mcmc.get_samples()))
        divergent = int(np.sum(mcmc.get_extra_fields()["diverging"]))
    return {"mean": flat.mean(0).tolist(), "sd": flat.std(0).tolist(),
            "method": f"{REFERENCE}; {divergent} divergent of 20,000"}


def make_file(seed: int = 20261129, names: tuple[str, ...] = ()) -> None:
    """Simulate each model's data (NumPy's generator seeded by ``seed``, one stream per
    model, by its index in :data:`MODELS`) and its reference, and write each of
    :data:`FILES` (:func:`_file`); only the models ``names`` where given (the others'
    entries kept as stored)."""
    models = {} if not names else dict(_stored())
    for index, name in enumerate(MODELS):
        if names and name not in names:
            continue
        data = {k: np.round(np.asarray(v, np.float64), 6).tolist()  # as stored
                for k, v in _simulate(name, np.random.default_rng([seed, index])).items()}
        models[name] = {"data": data, **_reference(name, data)}
        print(name, models[name]["method"], flush=True)
    for path in FILES:
        path.write_text(json.dumps({"source": __doc__.split("\n\n")[0], "seed": seed,
                                    "models": {name: models[name] for name in MODELS
                                               if _file(name) == path}}) + "\n")


if __name__ == "__main__":
    make_file(names=tuple(sys.argv[1:]))
