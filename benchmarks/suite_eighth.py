"""The everyday models' eighth holdout: six models of K = 3 .. 153 as a NumPyro user writes
them, each a family the earlier holdouts do not have.

Added 2026-12-01, after the end-of-fit check of minibatched fits: written, simulated and
their references run (``python benchmarks/suite_models.py NAME ...``) before any fit of
them. Their data and references are stored in ``suite_eighth.json``.

- ``von_mises_regression``: 200 wind directions (radians), a von Mises likelihood whose
  mean direction turns linearly with a standardised predictor, its concentration unknown
  (3). (Written first with Fisher and Lee's 2 atan(b x) link: its float64 NUTS reference's
  chains did not agree, sd of the intercept 2.2 rad, so the target was changed before any
  fit of it.)
- ``poisson_lognormal``: 150 overdispersed counts, a log-linear rate on one predictor plus
  an observation-level normal effect, centred on 0 with an unknown sd (153).
- ``logistic_growth``: 12 subjects measured at 10 times, a three-parameter logistic growth
  curve whose asymptote varies by subject (centred), its midpoint and time scale shared
  (17: a nonlinear mixed-effects model).
- ``dirichlet_regression``: 150 compositions of three parts, Dirichlet with the mean the
  softmax of a linear predictor (the first part the reference) times an unknown precision
  (5).
- ``skew_normal``: 200 draws of a skew-normal distribution (location, scale, shape), its
  density written out through ``numpyro.factor`` (NumPyro has none): a shape parameter
  whose posterior is skewed (3).
- ``hierarchical_ordinal``: 400 ratings on a five-point scale by 20 raters, an ordered
  logistic model with a predictor, ordered cutpoints and centred rater effects (26).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_eighth.json"
"""This holdout's data and references (the format of ``suite_models.json``)."""

SUBJECTS, TIMES = 12, 10
"""``logistic_growth``'s subjects and the times each is measured at (0 .. 18)."""

RATERS = 20
"""``hierarchical_ordinal``'s raters (20 ratings each)."""


def von_mises_regression(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu0 = numpyro.sample("mu0", dist.Normal(0.0, 1.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    kappa = numpyro.sample("kappa", dist.Gamma(2.0, 0.5))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.VonMises(mu0 + b * x, kappa), obs=y)


def poisson_lognormal(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("rows", y.shape[0]):
        e = numpyro.sample("e", dist.Normal(0.0, sigma))
        numpyro.sample("y", dist.Poisson(jnp.exp(a + b * x + e)), obs=y)


def logistic_growth(subject: Any, t: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    top = numpyro.sample("top", dist.Normal(100.0, 50.0))
    tau = numpyro.sample("tau", dist.HalfNormal(20.0))
    mid = numpyro.sample("mid", dist.Normal(8.0, 5.0))
    scale = numpyro.sample("scale", dist.LogNormal(0.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("subjects", SUBJECTS):
        asymptote = numpyro.sample("asymptote", dist.Normal(top, tau))
    curve = asymptote[subject] / (1.0 + jnp.exp(-(t - mid) / scale))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(curve, sigma), obs=y)


def dirichlet_regression(x: Any, y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5).expand([2]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([2]).to_event(1))
    phi = numpyro.sample("phi", dist.Gamma(2.0, 0.1))
    logits = jnp.concatenate([jnp.zeros((x.shape[0], 1)), a + x[:, None] * b], axis=1)
    y = y / jnp.sum(y, axis=-1, keepdims=True)  # the stored rows are rounded
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Dirichlet(phi * jax.nn.softmax(logits, axis=-1)), obs=y)


def skew_normal(y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import log_ndtr

    loc = numpyro.sample("loc", dist.Normal(0.0, 10.0))
    scale = numpyro.sample("scale", dist.HalfNormal(5.0))
    shape = numpyro.sample("shape", dist.Normal(0.0, 5.0))
    z = (y - loc) / scale
    with numpyro.plate("rows", y.shape[0]):
        numpyro.factor("y", jnp.log(2.0) + dist.Normal(0.0, 1.0).log_prob(z) - jnp.log(scale)
                       + log_ndtr(shape * z))


def hierarchical_ordinal(rater: Any, x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    cut = numpyro.sample("cut", dist.TransformedDistribution(
        dist.Normal(0.0, 3.0).expand([4]).to_event(1), dist.transforms.OrderedTransform()))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    with numpyro.plate("raters", RATERS):
        u = numpyro.sample("u", dist.Normal(0.0, tau))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.OrderedLogistic(b * x + u[rater], cut), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "von_mises_regression":
        x = rng.standard_normal(200).round(3)
        y = rng.vonmises(0.5 + 0.6 * x, 4.0)
        return {"x": x.tolist(), "y": y.tolist()}
    if name == "poisson_lognormal":
        x = rng.standard_normal(150).round(3)
        rate = np.exp(1.0 + 0.5 * x + 0.6 * rng.standard_normal(150))
        return {"x": x.tolist(), "y": rng.poisson(rate).astype(float).tolist()}
    if name == "logistic_growth":
        return _growth(rng)
    if name == "dirichlet_regression":
        x = rng.standard_normal(150).round(3)
        logits = np.stack([np.zeros(150), 0.5 + 0.8 * x, -0.3 - 0.5 * x], axis=1)
        mean = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        y = np.stack([rng.dirichlet(20.0 * m) for m in mean])
        y = np.clip(y, 1e-4, None)
        return {"x": x.tolist(), "y": (y / y.sum(1, keepdims=True)).tolist()}
    if name == "skew_normal":
        # Azzalini's construction: delta |u0| + sqrt(1 - delta^2) u1, shape 4
        delta = 4.0 / np.sqrt(17.0)
        u0, u1 = rng.standard_normal(200), rng.standard_normal(200)
        return {"y": (1.0 + 2.0 * (delta * np.abs(u0) + np.sqrt(1 - delta**2) * u1)).tolist()}
    assert name == "hierarchical_ordinal", name
    rater = np.repeat(np.arange(RATERS), 20)
    x = rng.standard_normal(rater.size).round(3)
    latent = 1.0 * x + 0.8 * rng.standard_normal(RATERS)[rater] + rng.logistic(size=x.size)
    y = np.digitize(latent, [-2.0, -0.5, 0.5, 2.0])
    return {"rater": rater.tolist(), "x": x.tolist(), "y": y.tolist()}


def _growth(rng: np.random.Generator) -> dict[str, Any]:
    """``logistic_growth``'s data: asymptotes 100 + 15 N(0, 1), midpoint 8, time scale 2,
    noise sd 4, at times 0, 2, .., 18."""
    subject = np.repeat(np.arange(SUBJECTS), TIMES)
    t = np.tile(np.arange(TIMES) * 2.0, SUBJECTS)
    asymptote = 100.0 + 15.0 * rng.standard_normal(SUBJECTS)
    y = asymptote[subject] / (1 + np.exp(-(t - 8.0) / 2.0)) + 4.0 * rng.standard_normal(t.size)
    return {"subject": subject.tolist(), "t": t.tolist(), "y": y.round(3).tolist()}


def _sites(*sites: str) -> Any:
    return functools.partial(accuracy.flatten, sites=sites, axis=1)


MODELS: dict[str, tuple[Any, Any, int]] = {
    "von_mises_regression": (von_mises_regression, _sites("mu0", "b", "kappa"), 3),
    "poisson_lognormal": (poisson_lognormal, _sites("a", "b", "sigma", "e"), 153),
    "logistic_growth": (logistic_growth, _sites("top", "tau", "mid", "scale", "sigma",
                                                "asymptote"), 5 + SUBJECTS),
    "dirichlet_regression": (dirichlet_regression, _sites("a", "b", "phi"), 5),
    "skew_normal": (skew_normal, _sites("loc", "scale", "shape"), 3),
    "hierarchical_ordinal": (hierarchical_ordinal, _sites("cut", "b", "tau", "u"),
                             6 + RATERS),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

INTEGER_DATA = {("logistic_growth", "subject"), ("hierarchical_ordinal", "rater"),
                ("hierarchical_ordinal", "y")}
"""Arguments passed as int32 (the others float32)."""
