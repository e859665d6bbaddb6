"""The everyday models' seventh holdout: seven models of K = 5 .. 82 as a NumPyro user
writes them, each a family the earlier holdouts do not have.

Added 2026-11-30 (late), after the sixth holdout's changes: written, simulated and their
references run (``python benchmarks/suite_models.py NAME ...``) before any fit of them.
Their data and references are stored in ``suite_seventh.json``.

- ``beta_regression``: 300 proportions, a logit-linear mean on 3 predictors and a
  log-linear precision on the first (6 parameters).
- ``collinear_regression``: 200 rows of 4 predictors, the first two correlated at 0.995
  (posterior correlation of their coefficients near -0.995), a normal regression (6).
- ``emax_dose_response``: 120 subjects at 6 doses (0 .. 100), the sigmoid Emax model of
  pharmacology (baseline, maximum effect, ED50, Hill coefficient, noise sd: 5).
- ``cjs_survival``: Cormack-Jolly-Seber capture-recapture, 280 animals over 8 occasions,
  survival and recapture per occasion, the unseen states summed out (14; the last
  survival and recapture are identified only through their product).
- ``hurdle_gamma``: 400 amounts, zero with a logistic probability, else gamma with a
  log-linear mean (5).
- ``heckman_selection``: 500 rows, an outcome observed only where a probit selection holds,
  the two errors correlated (6).
- ``gp_classification``: 60 binary outcomes on a line, a latent Gaussian process on the
  logit (non-centred: f = L z with L the Cholesky factor of a squared-exponential kernel
  plus a 1e-6 jitter), its length scale and amplitude unknown (62).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_seventh.json"
"""This holdout's data and references (the format of ``suite_models.json``)."""

DOSES = (0.0, 1.0, 3.0, 10.0, 30.0, 100.0)
"""``emax_dose_response``'s doses (20 subjects each)."""

OCCASIONS = 8
"""``cjs_survival``'s capture occasions (40 animals released at each but the last)."""

GP_POINTS = 60
"""``gp_classification``'s inputs, evenly spaced on [0, 10]."""

GP_JITTER = 1e-6
"""Added to the kernel's diagonal in ``gp_classification``."""


def beta_regression(x: Any, y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1]]).to_event(1))
    c = numpyro.sample("c", dist.Normal(0.0, 2.5))
    d = numpyro.sample("d", dist.Normal(0.0, 1.0))
    mean = jax.nn.sigmoid(a + x @ b)
    precision = jnp.exp(c + d * x[:, 0])
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Beta(mean * precision, (1.0 - mean) * precision), obs=y)


def collinear_regression(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 10.0))
    b = numpyro.sample("b", dist.Normal(0.0, 10.0).expand([x.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(a + x @ b, sigma), obs=y)


def emax_dose_response(dose: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    e0 = numpyro.sample("e0", dist.Normal(0.0, 10.0))
    emax = numpyro.sample("emax", dist.Normal(0.0, 20.0))
    ed50 = numpyro.sample("ed50", dist.LogNormal(jnp.log(10.0), 1.5))
    hill = numpyro.sample("hill", dist.LogNormal(0.0, 0.5))
    sigma = numpyro.sample("sigma", dist.HalfNormal(5.0))
    effect = emax * dose**hill / (ed50**hill + dose**hill)
    with numpyro.plate("subjects", y.shape[0]):
        numpyro.sample("y", dist.Normal(e0 + effect, sigma), obs=y)


def cjs_survival(y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    steps = y.shape[1] - 1
    phi = numpyro.sample("phi", dist.Beta(1.0, 1.0).expand([steps]).to_event(1))
    p = numpyro.sample("p", dist.Beta(1.0, 1.0).expand([steps]).to_event(1))
    # chi[t]: the chance never to be seen after occasion t, alive at t
    chi = [jnp.ones(())]
    for t in reversed(range(steps)):
        chi.insert(0, 1.0 - phi[t] + phi[t] * (1.0 - p[t]) * chi[0])
    chi = jnp.stack(chi)
    occasion = jnp.arange(y.shape[1])
    first = jnp.argmax(y, axis=1)
    last = y.shape[1] - 1 - jnp.argmax(y[:, ::-1], axis=1)
    known = (occasion[None, :-1] >= first[:, None]) & (occasion[None, :-1] < last[:, None])
    seen = y[:, 1:]
    between = jnp.log(phi) + seen * jnp.log(p) + (1 - seen) * jnp.log1p(-p)
    with numpyro.plate("animals", y.shape[0]):
        numpyro.factor("history", jnp.sum(jnp.where(known, between, 0.0), axis=1)
                       + jnp.log(chi[last]))


def hurdle_gamma(x: Any, y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a_zero = numpyro.sample("a_zero", dist.Normal(0.0, 2.5))
    b_zero = numpyro.sample("b_zero", dist.Normal(0.0, 2.5))
    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5))
    shape = numpyro.sample("shape", dist.Gamma(2.0, 0.5))
    logit_zero = a_zero + b_zero * x
    mean = jnp.exp(a + b * x)
    positive = y > 0
    amount = dist.Gamma(shape, shape / mean).log_prob(jnp.where(positive, y, 1.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.factor("y", jnp.where(positive, jax.nn.log_sigmoid(-logit_zero) + amount,
                                      jax.nn.log_sigmoid(logit_zero)))


def heckman_selection(x: Any, z: Any, selected: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import log_ndtr

    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([2]).to_event(1))
    g = numpyro.sample("g", dist.Normal(0.0, 2.5).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    rho = numpyro.sample("rho", dist.Uniform(-1.0, 1.0))
    index = g[0] + g[1] * z
    residual = y - b[0] - b[1] * x
    observed = (dist.Normal(0.0, sigma).log_prob(residual)
                + log_ndtr((index + rho / sigma * residual) / jnp.sqrt(1.0 - rho**2)))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.factor("y", jnp.where(selected > 0, observed, log_ndtr(-index)))


def _kernel(x: Any, length: Any, amplitude: Any, xp: Any) -> Any:
    """The squared-exponential kernel of ``gp_classification`` plus its jitter, (..., N, N)
    for length and amplitude (...), in the array module ``xp``."""
    gap = (x[:, None] - x[None, :]) ** 2
    length, amplitude = xp.asarray(length)[..., None, None], xp.asarray(amplitude)[..., None, None]
    return amplitude**2 * xp.exp(-0.5 * gap / length**2) + GP_JITTER * xp.eye(x.shape[0])


def gp_classification(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    length = numpyro.sample("length", dist.InverseGamma(5.0, 5.0))
    amplitude = numpyro.sample("amplitude", dist.HalfNormal(2.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([x.shape[0]]).to_event(1))
    f = jnp.linalg.cholesky(_kernel(x, length, amplitude, jnp)) @ z
    with numpyro.plate("points", y.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=f), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "beta_regression":
        x = rng.standard_normal((300, 3)).round(3)
        mean = 1 / (1 + np.exp(-(-0.5 + x @ np.array([0.8, -0.4, 0.2]))))
        precision = np.exp(2.5 + 0.5 * x[:, 0])
        y = rng.beta(mean * precision, (1 - mean) * precision)
        return {"x": x.tolist(), "y": np.clip(y, 1e-3, 1 - 1e-3).tolist()}
    if name == "collinear_regression":
        x = rng.standard_normal((200, 4))
        x[:, 1] = x[:, 0] + 0.1 * rng.standard_normal(200)
        x = x.round(3)
        y = 1.0 + x @ np.array([1.0, 0.5, -0.7, 0.0]) + rng.standard_normal(200)
        return {"x": x.tolist(), "y": y.tolist()}
    if name == "emax_dose_response":
        dose = np.repeat(DOSES, 20)
        effect = 10.0 * dose**1.2 / (8.0**1.2 + dose**1.2)
        return {"dose": dose.tolist(), "y": (2.0 + effect + 3.0 * rng.standard_normal(dose.size))
                .tolist()}
    if name == "cjs_survival":
        return {"y": _capture_histories(rng).tolist()}
    if name == "hurdle_gamma":
        x = rng.standard_normal(400).round(3)
        zero = rng.random(400) < 1 / (1 + np.exp(-(-0.3 + 0.8 * x)))
        mean = np.exp(1.0 + 0.5 * x)
        return {"x": x.tolist(), "y": np.where(zero, 0.0, rng.gamma(3.0, mean / 3.0)).tolist()}
    if name == "heckman_selection":
        return _selection(rng)
    assert name == "gp_classification", name
    x = np.linspace(0.0, 10.0, GP_POINTS)
    f = 2.0 * np.sin(x) + 0.5
    return {"x": x.tolist(), "y": (rng.random(GP_POINTS) < 1 / (1 + np.exp(-f))).astype(float)
            .tolist()}


def _capture_histories(rng: np.random.Generator) -> np.ndarray:
    """(280, OCCASIONS) 0/1: 40 animals marked at each occasion but the last, survival
    0.6-0.85 and recapture 0.4-0.7 by occasion."""
    phi = np.array([0.8, 0.7, 0.85, 0.6, 0.75, 0.8, 0.7])
    p = np.array([0.5, 0.6, 0.4, 0.7, 0.5, 0.6, 0.5])
    histories = np.zeros((40 * (OCCASIONS - 1), OCCASIONS), np.int64)
    for animal in range(histories.shape[0]):
        first = animal // 40
        histories[animal, first] = 1
        for t in range(first, OCCASIONS - 1):
            if rng.random() >= phi[t]:
                break
            histories[animal, t + 1] = int(rng.random() < p[t])
    return histories


def _selection(rng: np.random.Generator) -> dict[str, Any]:
    """``heckman_selection``'s data: errors with correlation 0.6, outcome sd 1.5, half
    the rows selected; an unselected row's y is 0 (not read)."""
    x, z = rng.standard_normal(500).round(3), rng.standard_normal(500).round(3)
    u = rng.standard_normal(500)
    e = 1.5 * (0.6 * u + 0.8 * rng.standard_normal(500))
    selected = (0.2 + 1.0 * z + u > 0).astype(np.int64)
    y = np.where(selected > 0, 1.0 + 0.7 * x + e, 0.0)
    return {"x": x.tolist(), "z": z.tolist(), "selected": selected.tolist(), "y": y.tolist()}


def gp_quantities(draws: dict) -> np.ndarray:
    """(length, amplitude, the 60 latent logits f = L z as the model builds them)."""
    x = np.linspace(0.0, 10.0, GP_POINTS)
    length = np.asarray(draws["length"], np.float64)
    amplitude = np.asarray(draws["amplitude"], np.float64)
    z = np.asarray(draws["z"], np.float64)
    f = np.concatenate([  # a thousand draws at a time: (S, 60, 60) whole is S * 29 KB
        np.einsum("sij,sj->si", np.linalg.cholesky(
            _kernel(x, length[s:s + 1000], amplitude[s:s + 1000], np)), z[s:s + 1000])
        for s in range(0, z.shape[0], 1000)])
    return np.concatenate([length[:, None], amplitude[:, None], f], -1)


def _sites(*sites: str) -> Any:
    return functools.partial(accuracy.flatten, sites=sites, axis=1)


MODELS: dict[str, tuple[Any, Any, int]] = {
    "beta_regression": (beta_regression, _sites("a", "b", "c", "d"), 6),
    "collinear_regression": (collinear_regression, _sites("a", "b", "sigma"), 6),
    "emax_dose_response": (emax_dose_response, _sites("e0", "emax", "ed50", "hill", "sigma"),
                           5),
    "cjs_survival": (cjs_survival, _sites("phi", "p"), 2 * (OCCASIONS - 1)),
    "hurdle_gamma": (hurdle_gamma, _sites("a_zero", "b_zero", "a", "b", "shape"), 5),
    "heckman_selection": (heckman_selection, _sites("b", "g", "sigma", "rho"), 6),
    "gp_classification": (gp_classification, gp_quantities, GP_POINTS + 2),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

INTEGER_DATA = {("cjs_survival", "y"), ("heckman_selection", "selected")}
"""Arguments passed as int32 (the others float32)."""
