"""The everyday models' sixth holdout: five more models of K = 124 .. 605 as a NumPyro user
writes them.

Added 2026-11-30, after the fifth holdout's change (``advi.anneal``): written, simulated
and their references run (``python benchmarks/suite_models.py NAME ...``) before any fit
of them. Their data and references are stored in ``suite_sixth.json`` (predictors
rounded to 3 decimals, so that the file stays under 1 MiB).

- ``poisson_ar_states``: 500 daily counts whose log rate is a latent AR(1), non-centred
  (503 parameters).
- ``random_slopes``: 300 groups of 10 rows, each group's intercept and slope non-centred
  with their own scales (605).
- ``multinomial_logit``: 2,000 choices among 50 categories on 5 predictors, the first
  category the reference (294).
- ``student_t_logistic``: a logistic regression on 150 predictors and 300 rows under
  Student-t(3) priors of scale 0.5 (151).
- ``nested_hierarchy``: 2,000 pupils in 100 schools in 20 districts, normal outcomes,
  school and district effects non-centred (124).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_sixth.json"
"""This holdout's data and references (the format of ``suite_models.json``)."""

DAYS = 500
"""``poisson_ar_states``' days."""

SLOPE_GROUPS = 300
"""``random_slopes``' groups."""

CATEGORIES = 50
"""``multinomial_logit``'s categories."""

SCHOOLS, DISTRICTS = 100, 20
"""``nested_hierarchy``'s schools (five to a district) and districts."""


def poisson_ar_states(y: Any) -> None:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 3.0))
    phi = numpyro.sample("phi", dist.Uniform(-1.0, 1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([DAYS]).to_event(1))

    def step(previous: Any, innovation: Any) -> tuple[Any, Any]:
        state = phi * previous + sigma * innovation
        return state, state

    first = sigma / jnp.sqrt(1.0 - phi**2) * z[0]
    _, rest = jax.lax.scan(step, first, z[1:])
    states = jnp.concatenate([first[None], rest])
    numpyro.sample("y", dist.Poisson(jnp.exp(mu + states)).to_event(1), obs=y)


def random_slopes(group: Any, x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    s_a = numpyro.sample("s_a", dist.HalfNormal(1.0))
    s_b = numpyro.sample("s_b", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("groups", SLOPE_GROUPS):
        z_a = numpyro.sample("z_a", dist.Normal(0.0, 1.0))
        z_b = numpyro.sample("z_b", dist.Normal(0.0, 1.0))
    mean = a + s_a * z_a[group] + (b + s_b * z_b[group]) * x
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(mean, sigma), obs=y)


def multinomial_logit(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5).expand([CATEGORIES - 1]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1], CATEGORIES - 1])
                       .to_event(2))
    logits = jnp.concatenate([jnp.zeros((x.shape[0], 1)), a + x @ b], axis=1)
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Categorical(logits=logits), obs=y)


def student_t_logistic(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.StudentT(3.0, 0.0, 0.5).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=a + x @ b), obs=y)


def nested_hierarchy(school: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    s_school = numpyro.sample("s_school", dist.HalfNormal(1.0))
    s_district = numpyro.sample("s_district", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("districts", DISTRICTS):
        z_district = numpyro.sample("z_district", dist.Normal(0.0, 1.0))
    with numpyro.plate("schools", SCHOOLS):
        z_school = numpyro.sample("z_school", dist.Normal(0.0, 1.0))
    district = np.arange(SCHOOLS) // (SCHOOLS // DISTRICTS)
    effect = s_district * z_district[district] + s_school * z_school
    with numpyro.plate("pupils", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu + effect[school], sigma), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "poisson_ar_states":
        states = np.zeros(DAYS)
        states[0] = 0.3 / np.sqrt(1 - 0.9**2) * rng.standard_normal()
        for t in range(1, DAYS):
            states[t] = 0.9 * states[t - 1] + 0.3 * rng.standard_normal()
        return {"y": rng.poisson(np.exp(1.5 + states)).tolist()}
    if name == "random_slopes":
        group = np.repeat(np.arange(SLOPE_GROUPS), 10)
        x = rng.standard_normal(group.size).round(3)
        a = 1.0 + 0.8 * rng.standard_normal(SLOPE_GROUPS)
        b = 0.5 + 0.3 * rng.standard_normal(SLOPE_GROUPS)
        return {"group": group.tolist(), "x": x.tolist(),
                "y": (a[group] + b[group] * x + rng.standard_normal(group.size)).tolist()}
    if name == "multinomial_logit":
        x = rng.standard_normal((2000, 5)).round(3)
        coef = np.concatenate([np.zeros((6, 1)), rng.normal(0.0, 0.7, (6, CATEGORIES - 1))], 1)
        logits = coef[0] + x @ coef[1:]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        return {"x": x.tolist(),
                "y": [int(rng.choice(CATEGORIES, p=row)) for row in p]}
    if name == "student_t_logistic":
        x = rng.standard_normal((300, 150)).round(3)
        coef = np.where(rng.random(150) < 0.1, rng.normal(0.0, 1.5, 150), 0.0)
        return {"x": x.tolist(),
                "y": (rng.random(300) < 1 / (1 + np.exp(-(0.3 + x @ coef)))).astype(float)
                .tolist()}
    assert name == "nested_hierarchy", name
    school = rng.integers(0, SCHOOLS, 2000)
    district = np.arange(SCHOOLS) // (SCHOOLS // DISTRICTS)
    effect = 0.5 * rng.standard_normal(DISTRICTS)[district] + 0.3 * rng.standard_normal(SCHOOLS)
    return {"school": school.tolist(),
            "y": (2.0 + effect[school] + rng.standard_normal(2000)).tolist()}


def _sites(*sites: str) -> Any:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def _scaled(draws: dict, scale: str, z: str) -> np.ndarray:
    return np.asarray(draws[scale], np.float64)[:, None] * np.asarray(draws[z], np.float64)


def ar_quantities(draws: dict) -> np.ndarray:
    """(mu, phi, sigma, the 500 latent states as the model builds them)."""
    phi = np.asarray(draws["phi"], np.float64)
    sigma = np.asarray(draws["sigma"], np.float64)
    z = np.asarray(draws["z"], np.float64)
    states = np.empty_like(z)
    states[:, 0] = sigma / np.sqrt(1.0 - phi**2) * z[:, 0]
    for t in range(1, z.shape[1]):
        states[:, t] = phi * states[:, t - 1] + sigma * z[:, t]
    return np.concatenate([_sites("mu", "phi", "sigma")(draws), states], -1)


def slopes_quantities(draws: dict) -> np.ndarray:
    """(a, b, s_a, s_b, sigma, the 300 intercept effects, the 300 slope effects)."""
    return np.concatenate([_sites("a", "b", "s_a", "s_b", "sigma")(draws),
                           _scaled(draws, "s_a", "z_a"), _scaled(draws, "s_b", "z_b")], -1)


def nested_quantities(draws: dict) -> np.ndarray:
    """(mu, s_school, s_district, sigma, the 20 district effects, the 100 school effects
    (their own part, without their district's))."""
    return np.concatenate([_sites("mu", "s_school", "s_district", "sigma")(draws),
                           _scaled(draws, "s_district", "z_district"),
                           _scaled(draws, "s_school", "z_school")], -1)


MODELS: dict[str, tuple[Any, Any, int]] = {
    "poisson_ar_states": (poisson_ar_states, ar_quantities, DAYS + 3),
    "random_slopes": (random_slopes, slopes_quantities, 2 * SLOPE_GROUPS + 5),
    "multinomial_logit": (multinomial_logit, _sites("a", "b"), 6 * (CATEGORIES - 1)),
    "student_t_logistic": (student_t_logistic, _sites("a", "b"), 151),
    "nested_hierarchy": (nested_hierarchy, nested_quantities, SCHOOLS + DISTRICTS + 4),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

INTEGER_DATA = {("random_slopes", "group"), ("multinomial_logit", "y"),
                ("nested_hierarchy", "school")}
"""Arguments passed as int32 (the others float32)."""
