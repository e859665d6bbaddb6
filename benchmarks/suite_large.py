"""The everyday models' fifth holdout: five larger models (K = 350 .. 3,003) as a NumPyro
user writes them.

Added 2026-11-30, after the fourth holdout's fits, written, simulated and their
references run (``python benchmarks/suite_models.py NAME ...``) before any fit of them.
The earlier holdouts are small (K <= 105); these reach the sizes where the Laplace
start's curvature costs thousands of gradients (K up to ``advi.laplace.HESSIAN_MAX_DIM``)
and, past it, the compiled search with one common scale. Their data and references are
stored in ``suite_large.json`` (the others' file would pass 1 MiB with them).

- ``varying_intercepts``: 400 groups of 1-15 rows (3,200 in all), a normal regression
  with a non-centred group intercept (404 parameters).
- ``hierarchical_logistic``: 1,000 groups of 8 binary outcomes, a non-centred group
  effect on the logit (1,002).
- ``car_poisson``: disease counts in the 400 areas of a 20 x 20 grid, their log relative
  risk a proper conditional autoregression on the grid's rook neighbours (NumPyro's
  ``CAR``) with unknown correlation and precision (403).
- ``irt_2pl``: 300 students answering 25 items, a two-parameter logistic item response
  model, abilities N(0, 1), log-normal discriminations (350).
- ``many_groups``: 3,000 groups of 4 normal measurements, a non-centred normal-normal
  hierarchy (3,003: above the Laplace start's ``HESSIAN_MAX_DIM``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_large.json"
"""This holdout's data and references (the format of ``suite_models.json``)."""

GRID = 20
"""``car_poisson``'s grid side (GRID^2 areas)."""

VARYING_GROUPS = 400
"""``varying_intercepts``' groups."""


def varying_intercepts(group: Any, x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    s_u = numpyro.sample("s_u", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("groups", VARYING_GROUPS):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(a + s_u * z[group] + b * x, sigma), obs=y)


def hierarchical_logistic(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    s = numpyro.sample("s", dist.HalfNormal(1.0))
    with numpyro.plate("groups", y.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Bernoulli(logits=(a + s * z)[:, None]).expand(y.shape)
                   .to_event(2), obs=y)


def grid_adjacency(side: int) -> np.ndarray:
    """(side^2, side^2) 0/1 rook adjacency of a side x side grid, row-major areas."""
    index = np.arange(side * side).reshape(side, side)
    adjacency = np.zeros((side * side, side * side))
    for a, b in ((index[:, :-1], index[:, 1:]), (index[:-1, :], index[1:, :])):
        adjacency[a.ravel(), b.ravel()] = adjacency[b.ravel(), a.ravel()] = 1.0
    return adjacency


def car_poisson(expected: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    b0 = numpyro.sample("b0", dist.Normal(0.0, 2.0))
    alpha = numpyro.sample("alpha", dist.Uniform(0.0, 1.0))
    tau = numpyro.sample("tau", dist.Gamma(2.0, 0.5))
    phi = numpyro.sample("phi", dist.CAR(0.0, alpha, tau, grid_adjacency(GRID),
                                         is_sparse=True))
    with numpyro.plate("areas", y.shape[0]):
        numpyro.sample("y", dist.Poisson(expected * jnp.exp(b0 + phi)), obs=y)


def irt_2pl(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    students, items = y.shape
    with numpyro.plate("students", students):
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0))
    with numpyro.plate("items", items):
        b = numpyro.sample("b", dist.Normal(0.0, 2.0))
        a = numpyro.sample("a", dist.LogNormal(0.0, 0.5))
    numpyro.sample("y", dist.Bernoulli(logits=a * (theta[:, None] - b)).to_event(2), obs=y)


def many_groups(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfNormal(1.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    with numpyro.plate("groups", y.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal((mu + tau * z)[:, None], sigma).expand(y.shape)
                   .to_event(2), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "varying_intercepts":
        group = np.repeat(np.arange(VARYING_GROUPS), rng.integers(1, 16, VARYING_GROUPS))
        x = rng.standard_normal(group.size)
        effect = 0.7 * rng.standard_normal(VARYING_GROUPS)
        return {"group": group.tolist(), "x": x.tolist(),
                "y": (1.0 + effect[group] + 0.5 * x + rng.standard_normal(group.size))
                .tolist()}
    if name == "hierarchical_logistic":
        logits = -0.5 + 0.8 * rng.standard_normal(1000)
        return {"y": (rng.random((1000, 8)) < 1 / (1 + np.exp(-logits[:, None])))
                .astype(float).tolist()}
    if name == "car_poisson":
        adjacency = grid_adjacency(GRID)
        precision = 2.0 * (np.diag(adjacency.sum(1)) - 0.9 * adjacency)
        phi = np.linalg.solve(np.linalg.cholesky(precision).T,
                              rng.standard_normal(GRID * GRID))
        expected = rng.uniform(5.0, 50.0, GRID * GRID)
        return {"expected": expected.tolist(),
                "y": rng.poisson(expected * np.exp(0.2 + phi)).tolist()}
    if name == "irt_2pl":
        theta, b = rng.standard_normal(300), rng.standard_normal(25)
        a = np.exp(0.3 * rng.standard_normal(25))
        logits = a * (theta[:, None] - b)
        return {"y": (rng.random((300, 25)) < 1 / (1 + np.exp(-logits))).astype(float)
                .tolist()}
    assert name == "many_groups", name
    effect = 0.5 * rng.standard_normal(3000)
    return {"y": (2.0 + effect[:, None] + rng.standard_normal((3000, 4))).tolist()}


def _sites(*sites: str) -> Any:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def _effects(scales: tuple[str, ...], scale: str) -> Any:
    """(the sites ``scales``, then the group effects ``scale`` times z as the model builds
    them)."""
    def quantities(draws: dict) -> np.ndarray:
        effects = np.asarray(draws[scale], np.float64)[:, None] * np.asarray(draws["z"],
                                                                           np.float64)
        return np.concatenate([_sites(*scales)(draws), effects], -1)

    return quantities


MODELS: dict[str, tuple[Any, Any, int]] = {
    "varying_intercepts": (varying_intercepts, _effects(("a", "b", "s_u", "sigma"), "s_u"),
                           404),
    "hierarchical_logistic": (hierarchical_logistic, _effects(("a", "s"), "s"), 1002),
    "car_poisson": (car_poisson, _sites("b0", "alpha", "tau", "phi"), 3 + GRID * GRID),
    "irt_2pl": (irt_2pl, _sites("theta", "b", "a"), 350),
    "many_groups": (many_groups, _effects(("mu", "tau", "sigma"), "tau"), 3003),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

INTEGER_DATA = {("varying_intercepts", "group")}
"""Arguments passed as int32 (the others float32)."""
