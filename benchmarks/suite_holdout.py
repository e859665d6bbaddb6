"""The everyday models' second and third holdouts: thirteen more models as a NumPyro user
writes them.

The second, seven models, added 2026-11-30, after every default of the robust preset had
been chosen: written,
simulated and their references run (``python benchmarks/suite_models.py NAME ...``) before
any fit of them. Each covers something the suite did not have: an overdispersed count, a
centred varying-slopes hierarchy, a near-unit-root series, a paired-comparison model, a
smoothing prior, a truncated likelihood and counts at large exposures. Their data and
references live with the other everyday models' (``suite_models.json``), and
:mod:`suite_models` registers them.

- ``negative_binomial``: 200 counts, a log-linear mean, NumPyro's ``NegativeBinomial2``
  with an unknown concentration (Gamma(2, 0.1), the prior Stan's wiki recommends).
- ``varying_slopes``: 20 groups of 8 rows, each group's intercept and slope drawn
  together from a bivariate normal whose correlation is LKJ(2), centred (McElreath 2020,
  Section 14.1's cafés): 40 group effects, their means, scales and correlation.
- ``ar1_near_unit_root``: 200 points of an AR(1) with phi = 0.97 (phi ~ U(-1, 1)), the
  likelihood conditional on the first point; its mean is weakly identified as phi nears 1.
- ``bradley_terry``: 200 games among 12 players, strengths ~ N(0, sigma) centred, sigma
  unknown.
- ``spline_random_walk``: 120 noisy points of a smooth curve on 20 Gaussian bumps whose
  weights follow a random walk of unknown scale (non-centred), a smoothing prior.
- ``truncated_normal``: 150 draws of N(-0.5, 1.5^2) truncated below at 0 (only the
  tail is seen), its location and scale unknown (NumPyro's ``TruncatedNormal``).
- ``poisson_exposure``: 100 regions' counts at populations 1e4 .. 1e6 and a rate near
  1e-3 per person (log rate a + b x), counts up to about 1,500: a posterior much narrower
  than float32's resolution of log p's larger terms.

A third holdout of six followed the same day, after the second's fits had changed one
default (:data:`THIRD`), written, simulated and referenced before any fit of them:

- ``probit_regression``: 300 rows, 3 predictors, a probit link written as a user would
  (``Bernoulli(probs=norm.cdf(eta))``), linear predictors up to about +-9.5 at the
  posterior mean (float32's normal cdf is 0 or 1 beyond +-5.3).
- ``occupancy``: an ecologist's site-occupancy model, 100 sites visited 4 times, the
  latent occupied state summed out (``logsumexp``), occupancy logistic in a site covariate.
- ``local_level``: 100 points of a random walk seen in noise, both sds unknown, the walk
  non-centred (102 parameters; the two sds trade off along a ridge).
- ``exponential_decay``: a nonlinear regression, y = A exp(-k t) + c, 40 points,
  log-normal priors on A and k (a curved posterior).
- ``zero_sum_anova``: 8 groups of 10 rows, group effects by NumPyro's ``ZeroSumNormal``
  (its zero-sum transform), their scale unknown.
- ``poisson_hierarchy``: 25 groups of 1-6 counts, centred log-normal group rates
  (a mild funnel where a group has one or two counts).
"""

from __future__ import annotations

from typing import Any

import bench_accuracy as accuracy
import numpy as np

BUMPS = 20
"""``spline_random_walk``'s basis functions."""


def negative_binomial(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    phi = numpyro.sample("phi", dist.Gamma(2.0, 0.1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.NegativeBinomial2(jnp.exp(a + b * x), phi), obs=y)


def varying_slopes(group: Any, x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    groups = int(np.max(group)) + 1
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    tau = numpyro.sample("tau", dist.HalfNormal(2.0).expand([2]).to_event(1))
    corr_cholesky = numpyro.sample("L_corr", dist.LKJCholesky(2, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("groups", groups):
        ab = numpyro.sample("ab", dist.MultivariateNormal(
            mu, scale_tril=tau[:, None] * corr_cholesky))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Normal(ab[group, 0] + ab[group, 1] * x, sigma), obs=y)


def ar1_near_unit_root(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("times", y.shape[0] - 1):
        numpyro.sample("y", dist.Normal(mu + phi * (y[:-1] - mu), sigma), obs=y[1:])


def bradley_terry(winner: Any, loser: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    players = int(max(np.max(winner), np.max(loser))) + 1
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("players", players):
        strength = numpyro.sample("strength", dist.Normal(0.0, sigma))
    with numpyro.plate("games", winner.shape[0]):
        numpyro.sample("won", dist.Bernoulli(logits=strength[winner] - strength[loser]),
                       obs=1.0)


def spline_random_walk(basis: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    w0 = numpyro.sample("w0", dist.Normal(0.0, 2.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    steps = numpyro.sample("steps", dist.Normal(0.0, 1.0).expand([basis.shape[1] - 1])
                           .to_event(1))
    w = w0 + jnp.concatenate([jnp.zeros(1), tau * jnp.cumsum(steps)])
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(basis @ w, sigma), obs=y)


def truncated_normal(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    loc = numpyro.sample("loc", dist.Normal(0.0, 5.0))
    scale = numpyro.sample("scale", dist.HalfNormal(5.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.TruncatedNormal(loc, scale, low=0.0), obs=y)


def poisson_exposure(exposure: Any, x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 10.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("regions", y.shape[0]):
        numpyro.sample("y", dist.Poisson(exposure * jnp.exp(a + b * x)), obs=y)


def probit_regression(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.stats import norm

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(probs=norm.cdf(a + x @ b)), obs=y)


def occupancy(x: Any, detections: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    visits = 4
    a0 = numpyro.sample("a0", dist.Normal(0.0, 2.0))
    a1 = numpyro.sample("a1", dist.Normal(0.0, 2.0))
    b0 = numpyro.sample("b0", dist.Normal(0.0, 2.0))
    log_psi, log_not_psi = jax.nn.log_sigmoid(a0 + a1 * x), jax.nn.log_sigmoid(-(a0 + a1 * x))
    seen = dist.Binomial(visits, logits=b0).log_prob(detections)
    unseen = jnp.logaddexp(log_psi + visits * jax.nn.log_sigmoid(-b0), log_not_psi)
    numpyro.factor("sites", jnp.sum(jnp.where(detections > 0, log_psi + seen, unseen)))


def local_level(y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu0 = numpyro.sample("mu0", dist.Normal(0.0, 5.0))
    level_sd = numpyro.sample("level_sd", dist.HalfNormal(1.0))
    noise_sd = numpyro.sample("noise_sd", dist.HalfNormal(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([y.shape[0] - 1]).to_event(1))
    level = mu0 + jnp.concatenate([jnp.zeros(1), level_sd * jnp.cumsum(z)])
    with numpyro.plate("times", y.shape[0]):
        numpyro.sample("y", dist.Normal(level, noise_sd), obs=y)


def exponential_decay(t: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    amplitude = numpyro.sample("A", dist.LogNormal(1.0, 1.0))
    rate = numpyro.sample("k", dist.LogNormal(-1.0, 1.0))
    floor = numpyro.sample("c", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("times", t.shape[0]):
        numpyro.sample("y", dist.Normal(amplitude * jnp.exp(-rate * t) + floor, sigma), obs=y)


def zero_sum_anova(group: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    groups = int(np.max(group)) + 1
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    effect = numpyro.sample("effect", dist.ZeroSumNormal(tau, event_shape=(groups,)))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu + effect[group], sigma), obs=y)


def poisson_hierarchy(group: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    groups = int(np.max(group)) + 1
    mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("groups", groups):
        log_rate = numpyro.sample("log_rate", dist.Normal(mu, tau))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Poisson(jnp.exp(log_rate[group])), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "negative_binomial":
        x = rng.standard_normal(200)
        mean = np.exp(1.0 + 0.5 * x)
        return {"x": x.tolist(), "y": rng.negative_binomial(2.0, 2.0 / (2.0 + mean)).tolist()}
    if name == "varying_slopes":
        return _varying_slopes_data(rng)
    if name == "ar1_near_unit_root":
        y = np.zeros(200)
        y[0] = 0.5
        for t in range(1, 200):
            y[t] = 0.5 + 0.97 * (y[t - 1] - 0.5) + 0.3 * rng.standard_normal()
        return {"y": y.tolist()}
    if name == "bradley_terry":
        strength = rng.standard_normal(12)
        first, second = (rng.permuted(np.tile(np.arange(12), (200, 1)), axis=1)[:, :2].T)
        won = rng.random(200) < 1 / (1 + np.exp(strength[second] - strength[first]))
        return {"winner": np.where(won, first, second).tolist(),
                "loser": np.where(won, second, first).tolist()}
    if name == "spline_random_walk":
        x = np.sort(rng.uniform(0.0, 10.0, 120))
        return {"basis": bumps(x).tolist(),
                "y": (np.sin(x) + 0.3 * rng.standard_normal(120)).tolist()}
    if name in THIRD:
        return _simulate_third(name, rng)
    if name == "truncated_normal":
        draws = -0.5 + 1.5 * rng.standard_normal(2000)
        return {"y": draws[draws > 0][:150].tolist()}
    assert name == "poisson_exposure", name
    exposure = rng.uniform(1e4, 1e6, 100).round()
    x = rng.standard_normal(100)
    return {"exposure": exposure.tolist(), "x": x.tolist(),
            "y": rng.poisson(exposure * np.exp(-7.0 + 0.3 * x)).tolist()}


def _simulate_third(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of a model of :data:`THIRD`."""
    if name == "probit_regression":
        x = rng.standard_normal((300, 3))
        eta = 0.5 + x @ np.array([2.5, -1.5, 1.0])
        return {"x": x.tolist(), "y": (rng.standard_normal(300) < eta).astype(float).tolist()}
    if name == "occupancy":
        x = rng.standard_normal(100)
        occupied = rng.random(100) < 1 / (1 + np.exp(-(0.4 + 1.0 * x)))
        return {"x": x.tolist(), "detections": (rng.binomial(4, 0.3, 100) * occupied).tolist()}
    if name == "local_level":
        level = 1.0 + np.cumsum(np.concatenate([[0.0], 0.3 * rng.standard_normal(99)]))
        return {"y": (level + 0.5 * rng.standard_normal(100)).tolist()}
    if name == "exponential_decay":
        t = np.linspace(0.0, 10.0, 40)
        return {"t": t.tolist(),
                "y": (5.0 * np.exp(-0.4 * t) + 1.0 + 0.3 * rng.standard_normal(40)).tolist()}
    if name == "zero_sum_anova":
        effect = rng.standard_normal(8)
        group = np.repeat(np.arange(8), 10)
        return {"group": group.tolist(),
                "y": (2.0 + (effect - effect.mean())[group] + rng.standard_normal(80)).tolist()}
    assert name == "poisson_hierarchy", name
    size = rng.integers(1, 7, 25)
    group = np.repeat(np.arange(25), size)
    log_rate = 1.0 + 0.6 * rng.standard_normal(25)
    return {"group": group.tolist(), "y": rng.poisson(np.exp(log_rate[group])).tolist()}


def _varying_slopes_data(rng: np.random.Generator) -> dict[str, Any]:
    cov = np.array([[0.8**2, 0.5 * 0.8 * 0.4], [0.5 * 0.8 * 0.4, 0.4**2]])
    ab = rng.multivariate_normal([1.0, 0.5], cov, 20)
    group = np.repeat(np.arange(20), 8)
    x = rng.standard_normal(160)
    y = ab[group, 0] + ab[group, 1] * x + rng.standard_normal(160)
    return {"group": group.tolist(), "x": x.tolist(), "y": y.tolist()}


def bumps(x: np.ndarray) -> np.ndarray:
    """(N, :data:`BUMPS`) Gaussian bumps on [0, 10], centres evenly spaced, width their
    spacing."""
    centres = np.linspace(0.0, 10.0, BUMPS)
    return np.exp(-0.5 * ((x[:, None] - centres) / (centres[1] - centres[0])) ** 2)


def _sites(*sites: str) -> Any:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def varying_slopes_quantities(draws: dict) -> np.ndarray:
    """(mu (2), tau (2), sigma, the correlation, the 40 group effects (group-major))."""
    corr = np.asarray(draws["L_corr"], np.float64)[:, 1, 0]
    return np.concatenate([_sites("mu", "tau", "sigma")(draws), corr[:, None],
                           np.asarray(draws["ab"], np.float64).reshape(corr.size, -1)], -1)


def _walk(draws: dict, start: str, scale: str, steps: str) -> np.ndarray:
    """(S, T) the random walk start + scale * cumsum(steps), from 0 steps at its first
    point, as the spline's weights and the local level are built."""
    size = np.asarray(draws[scale], np.float64)[:, None]
    walk = np.cumsum(size * np.asarray(draws[steps], np.float64), axis=1)
    return np.asarray(draws[start], np.float64)[:, None] + np.concatenate(
        [np.zeros_like(size), walk], 1)


def spline_quantities(draws: dict) -> np.ndarray:
    """(w (20), tau, sigma): the bumps' weights the model builds, and the two scales."""
    return np.concatenate([_walk(draws, "w0", "tau", "steps"),
                           _sites("tau", "sigma")(draws)], -1)


def level_quantities(draws: dict) -> np.ndarray:
    """(the level at each of the 100 times, level_sd, noise_sd), as the model builds it."""
    return np.concatenate([_walk(draws, "mu0", "level_sd", "z"),
                           _sites("level_sd", "noise_sd")(draws)], -1)


MODELS: dict[str, tuple[Any, Any, int]] = {
    "negative_binomial": (negative_binomial, _sites("a", "b", "phi"), 3),
    "varying_slopes": (varying_slopes, varying_slopes_quantities, 46),
    "ar1_near_unit_root": (ar1_near_unit_root, _sites("mu", "phi", "sigma"), 3),
    "bradley_terry": (bradley_terry, _sites("sigma", "strength"), 13),
    "spline_random_walk": (spline_random_walk, spline_quantities, 22),
    "truncated_normal": (truncated_normal, _sites("loc", "scale"), 2),
    "poisson_exposure": (poisson_exposure, _sites("a", "b"), 2),
    "probit_regression": (probit_regression, _sites("a", "b"), 4),
    "occupancy": (occupancy, _sites("a0", "a1", "b0"), 3),
    "local_level": (local_level, level_quantities, 102),
    "exponential_decay": (exponential_decay, _sites("A", "k", "c", "sigma"), 4),
    "zero_sum_anova": (zero_sum_anova, _sites("mu", "tau", "sigma", "effect"), 10),
    "poisson_hierarchy": (poisson_hierarchy, _sites("mu", "tau", "log_rate"), 27),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

THIRD = ("probit_regression", "occupancy", "local_level", "exponential_decay",
         "zero_sum_anova", "poisson_hierarchy")
"""The third holdout's models (module docstring)."""

INTEGER_DATA = {("varying_slopes", "group"), ("bradley_terry", "winner"),
                ("bradley_terry", "loser"), ("zero_sum_anova", "group"),
                ("poisson_hierarchy", "group")}
"""Arguments passed as int32 (the others float32)."""
