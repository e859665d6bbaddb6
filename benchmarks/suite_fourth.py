"""The everyday models' fourth holdout: seven more models as a NumPyro user writes them.

Added 2026-11-30, after the third holdout's fits: written, simulated and their
references run (``python benchmarks/suite_models.py NAME ...``) before any fit of them,
and no default of the robust preset chosen on them. Each covers something the suite did
not have: a log density with kinks, crossed random effects, a modelled scale, a gamma
GLM, a proportion at its boundary, measurements at a large offset, and rare events.

- ``laplace_regression``: median regression, 200 rows, 2 predictors, Laplace errors of
  unknown scale (a log density that is piecewise linear in the coefficients: no
  curvature of its own between kinks).
- ``crossed_effects``: 24 subjects each answering the same 16 items, a correct answer
  logistic in a subject's ability and an item's ease, both non-centred with unknown
  scales (lme4's ``(1 | subject) + (1 | item)``; 43 parameters).
- ``heteroscedastic_regression``: 150 rows whose noise sd is log-linear in the predictor.
- ``gamma_regression``: 150 positive outcomes, a log link on 2 predictors and an
  unknown gamma shape.
- ``zero_events``: two arms of 300 trials each, one with no event at all, uniform priors
  on each arm's proportion (the posterior of the zero arm piled against 0).
- ``large_offset``: 100 readings near 1.5e6 with sd 2 (a timestamp, a sensor's raw
  counts), a vague prior on their mean: its posterior sd, 0.2, is less than two float32
  spacings at 1.5e6 (0.125).
- ``rare_events_logistic``: 2,000 rows, 3 predictors, about 1% positives.
"""

from __future__ import annotations

from typing import Any

import bench_accuracy as accuracy
import numpy as np

SUBJECTS, ITEMS = 24, 16
"""``crossed_effects``' subjects and items (each subject answers every item once)."""


def laplace_regression(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0).expand([x.shape[1]]).to_event(1))
    s = numpyro.sample("s", dist.HalfNormal(2.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Laplace(a + x @ b, s), obs=y)


def crossed_effects(subject: Any, item: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    s_subject = numpyro.sample("s_subject", dist.HalfNormal(1.0))
    s_item = numpyro.sample("s_item", dist.HalfNormal(1.0))
    with numpyro.plate("subjects", SUBJECTS):
        z_subject = numpyro.sample("z_subject", dist.Normal(0.0, 1.0))
    with numpyro.plate("items", ITEMS):
        z_item = numpyro.sample("z_item", dist.Normal(0.0, 1.0))
    logits = a + s_subject * z_subject[subject] + s_item * z_item[item]
    with numpyro.plate("answers", y.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y)


def heteroscedastic_regression(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    c = numpyro.sample("c", dist.Normal(0.0, 2.0))
    d = numpyro.sample("d", dist.Normal(0.0, 2.0))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Normal(a + b * x, jnp.exp(c + d * x)), obs=y)


def gamma_regression(x: Any, y: Any) -> None:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1]]).to_event(1))
    shape = numpyro.sample("shape", dist.Gamma(2.0, 0.1))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Gamma(shape, shape / jnp.exp(a + x @ b)), obs=y)


def zero_events(events: Any, trials: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    with numpyro.plate("arms", events.shape[0]):
        p = numpyro.sample("p", dist.Beta(1.0, 1.0))
        numpyro.sample("events", dist.Binomial(trials, p), obs=events)


def large_offset(y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 1e7))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("readings", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


def rare_events_logistic(x: Any, y: Any) -> None:
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, 2.5))
    b = numpyro.sample("b", dist.Normal(0.0, 2.5).expand([x.shape[1]]).to_event(1))
    with numpyro.plate("rows", y.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=a + x @ b), obs=y)


def simulate(name: str, rng: np.random.Generator) -> dict[str, Any]:
    """The data of model ``name`` of :data:`MODELS` (its arguments by name, in order)."""
    if name == "laplace_regression":
        x = rng.standard_normal((200, 2))
        return {"x": x.tolist(),
                "y": (1.0 + x @ np.array([2.0, -1.0]) + rng.laplace(0.0, 0.7, 200)).tolist()}
    if name == "crossed_effects":
        subject = np.repeat(np.arange(SUBJECTS), ITEMS)
        item = np.tile(np.arange(ITEMS), SUBJECTS)
        logits = (0.8 + 1.0 * rng.standard_normal(SUBJECTS)[subject]
                  + 0.6 * rng.standard_normal(ITEMS)[item])
        return {"subject": subject.tolist(), "item": item.tolist(),
                "y": (rng.random(subject.size) < 1 / (1 + np.exp(-logits))).astype(float)
                .tolist()}
    if name == "heteroscedastic_regression":
        x = rng.uniform(-2.0, 2.0, 150)
        return {"x": x.tolist(),
                "y": (1.0 + 0.5 * x + np.exp(-1.0 + 0.6 * x) * rng.standard_normal(150))
                .tolist()}
    if name == "gamma_regression":
        x = rng.standard_normal((150, 2))
        mean = np.exp(0.5 + x @ np.array([0.8, -0.4]))
        return {"x": x.tolist(), "y": rng.gamma(3.0, mean / 3.0).tolist()}
    if name == "zero_events":
        return {"events": [float(rng.binomial(300, 0.05)), 0.0], "trials": [300.0, 300.0]}
    if name == "large_offset":
        return {"y": (1.5e6 + 2.0 * rng.standard_normal(100)).tolist()}
    assert name == "rare_events_logistic", name
    x = rng.standard_normal((2000, 3))
    logits = -5.0 + x @ np.array([0.8, -0.5, 0.3])
    return {"x": x.tolist(),
            "y": (rng.random(2000) < 1 / (1 + np.exp(-logits))).astype(float).tolist()}


def _sites(*sites: str) -> Any:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def crossed_quantities(draws: dict) -> np.ndarray:
    """(a, s_subject, s_item, the 24 subject effects, the 16 item effects), the effects
    as the model builds them (scale times z)."""
    def effects(scale: str, z: str) -> np.ndarray:
        return (np.asarray(draws[scale], np.float64)[:, None]
                * np.asarray(draws[z], np.float64))

    return np.concatenate([_sites("a", "s_subject", "s_item")(draws),
                           effects("s_subject", "z_subject"), effects("s_item", "z_item")], -1)


MODELS: dict[str, tuple[Any, Any, int]] = {
    "laplace_regression": (laplace_regression, _sites("a", "b", "s"), 4),
    "crossed_effects": (crossed_effects, crossed_quantities, 3 + SUBJECTS + ITEMS),
    "heteroscedastic_regression": (heteroscedastic_regression, _sites("a", "b", "c", "d"), 4),
    "gamma_regression": (gamma_regression, _sites("a", "b", "shape"), 4),
    "zero_events": (zero_events, _sites("p"), 2),
    "large_offset": (large_offset, _sites("mu", "sigma"), 2),
    "rare_events_logistic": (rare_events_logistic, _sites("a", "b"), 4),
}
"""Each model, the map from draws to the compared quantities (S, D) float64, and K."""

INTEGER_DATA = {("crossed_effects", "subject"), ("crossed_effects", "item")}
"""Arguments passed as int32 (the others float32)."""
