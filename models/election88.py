"""E2: hierarchical logistic regression of the 1988 election polls (Appendix G, Fig. 4b).

    Pr(y_n = 1) = logistic(beta_0 + beta_female female_n + beta_black black_n
                           + beta_female.black female_n black_n
                           + a_age[k[n]] + a_edu[l[n]] + a_age.edu[k[n], l[n]] + a_state[j[n]]),
    a_state[j] ~ N(a_region[m[j]] + beta_v.prev v_prev[j], sigma_state),   j = 1..51,
    a_age[k] ~ N(0, sigma_age), a_edu[l] ~ N(0, sigma_edu),
    a_age.edu[k, l] ~ N(0, sigma_age.edu), a_region[m] ~ N(0, sigma_region),
    every sigma ~ Uniform(0, 100);  every beta ~ N(0, 100) (sd; *choice*, as Stan's example).

The state effects are nested in the regions as the paper writes (centred parameterisation);
the states without respondents (AK, HI) keep their prior. Normal scales are standard
deviations. Indices are 0-based here (the CSV files are 1-based).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

from advi_repro.models import Problem
from advi_repro.models._plate import data_rows

N_AGE, N_EDU, N_REGION = 4, 4, 5
SIGMA_UPPER = 100.0
BETA_SD = 100.0

SITES: tuple[str, ...] = (
    "beta", "a_age", "a_edu", "a_age_edu", "a_state", "beta_v_prev", "a_region",
    "sigma_age", "sigma_edu", "sigma_age_edu", "sigma_state", "sigma_region",
)
"""``beta`` is (4,): (beta_0, beta_female, beta_black, beta_female.black)."""

_RESPONDENT_COLUMNS = ("y", "female", "black", "age", "edu", "state")


def _linear_predictor(
    params: dict[str, jax.Array],
    female: jax.Array,
    black: jax.Array,
    age: jax.Array,
    edu: jax.Array,
    state: jax.Array,
) -> jax.Array:
    """The logit of Pr(y_n = 1): (N,) for one draw, (S, N) for draws with leading axis S."""
    beta = params["beta"]
    return (
        beta[..., 0:1]
        + beta[..., 1:2] * female
        + beta[..., 2:3] * black
        + beta[..., 3:4] * female * black
        + params["a_age"][..., age]
        + params["a_edu"][..., edu]
        + params["a_age_edu"][..., age, edu]
        + params["a_state"][..., state]
    )


def model(
    y: jax.Array,
    female: jax.Array,
    black: jax.Array,
    age: jax.Array,
    edu: jax.Array,
    state: jax.Array,
    state_region: jax.Array,
    state_v_prev: jax.Array,
) -> None:
    """The joint density; the observation plate ``"data"`` runs over the N respondents.

    Args:
        y: (N,) int32, 1 = supports Bush.
        female, black: (N,) float32 indicators.
        age, edu: (N,) int32 categories in 0..3.
        state: (N,) int32 state index in 0..50.
        state_region: (51,) int32 region of each state in 0..4.
        state_v_prev: (51,) float32 Republican vote share 1976-84 of each state.
    """

    def sigma(name: str) -> jax.Array:
        return numpyro.sample(name, dist.Uniform(0.0, SIGMA_UPPER))

    def effects(name: str, loc: jax.Array | float, scale: jax.Array, shape: list[int]) -> jax.Array:
        normal = dist.Normal(loc, scale).expand(shape)
        return numpyro.sample(name, normal.to_event(len(shape)))

    beta = numpyro.sample("beta", dist.Normal(0.0, BETA_SD).expand([4]).to_event(1))
    beta_v_prev = numpyro.sample("beta_v_prev", dist.Normal(0.0, BETA_SD))
    params = {
        "beta": beta,
        "a_age": effects("a_age", 0.0, sigma("sigma_age"), [N_AGE]),
        "a_edu": effects("a_edu", 0.0, sigma("sigma_edu"), [N_EDU]),
        "a_age_edu": effects("a_age_edu", 0.0, sigma("sigma_age_edu"), [N_AGE, N_EDU]),
    }
    a_region = effects("a_region", 0.0, sigma("sigma_region"), [N_REGION])
    state_mean = a_region[state_region] + beta_v_prev * state_v_prev
    num_states = state_region.shape[0]
    params["a_state"] = effects("a_state", state_mean, sigma("sigma_state"), [num_states])
    with numpyro.plate("data", y.shape[0]) as idx:
        y_b, *covariates = data_rows(idx, y.shape[0], y, female, black, age, edu, state)
        logits = _linear_predictor(params, *covariates)
        numpyro.sample("y", dist.Bernoulli(logits=logits), obs=y_b)


def log_likelihood(
    samples: dict[str, jax.Array],
    y: jax.Array,
    female: jax.Array,
    black: jax.Array,
    age: jax.Array,
    edu: jax.Array,
    state: jax.Array,
) -> jax.Array:
    """Pointwise log Bernoulli(y_n | logistic(eta_sn)) in nats, all draws at once.

    Args:
        samples: draws with leading axis S: ``beta (S, 4)``, ``a_age (S, 4)``,
            ``a_edu (S, 4)``, ``a_age_edu (S, 4, 4)``, ``a_state (S, 51)``.
        y, female, black, age, edu, state: (N,) held-out respondents, as in ``model``.

    Returns:
        (S, N) float32.
    """
    logits = _linear_predictor(samples, female, black, age, edu, state)
    return dist.Bernoulli(logits=logits).log_prob(y[None, :])


def example_data() -> dict[str, jax.Array]:
    """Eight made-up respondents in 51 states (for the plate diagram)."""
    rng = np.random.default_rng(0)

    def ints(high: int, size: int = 8) -> jax.Array:
        return jnp.asarray(rng.integers(0, high, size), dtype=jnp.int32)

    return {"y": ints(2), "female": ints(2).astype(jnp.float32),
            "black": ints(2).astype(jnp.float32), "age": ints(N_AGE), "edu": ints(N_EDU),
            "state": ints(51), "state_region": ints(N_REGION, 51),
            "state_v_prev": jnp.asarray(rng.uniform(0.2, 0.7, 51), dtype=jnp.float32)}


def split_rows(num_rows: int, *, n_train: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of rows 0..num_rows-1: (train rows, held-out rows), each sorted.

    Raises:
        ValueError: n_train is not in 1..num_rows - 1.
    """
    if not 0 < n_train < num_rows:
        raise ValueError(f"n_train must be in 1..{num_rows - 1} (N = {num_rows}), got {n_train}")
    order = np.random.default_rng(seed).permutation(num_rows)
    return np.sort(order[:n_train]), np.sort(order[n_train:])


def load(path: str | os.PathLike, *, seed: int, n_train: int = 10000) -> Problem:
    """A seeded random split of the respondents into n_train training rows and the rest.

    Args:
        path: folder with ``election88_full.csv`` (one row per respondent, 1-based indices)
            and ``election88_states.csv`` (region and v_prev of all 51 states), as
            ``advi_repro.planning.datasets.fetch.fetch("election88", ...)`` writes them.
        seed: numpy Generator seed of the split.
        n_train: training respondents (the paper: 10,000); the other N - n_train are held
            out (1,566 of the 11,566 public rows; the paper reports 1,536).

    Returns:
        Problem: train holds the model's keyword arrays; heldout those of ``log_likelihood``.
    """
    folder = Path(path)
    respondents = pd.read_csv(folder / "election88_full.csv")
    states = pd.read_csv(folder / "election88_states.csv").sort_values("state")
    num_rows = len(respondents)
    train_rows, heldout_rows = split_rows(num_rows, n_train=n_train, seed=seed)
    if not np.array_equal(states["state"].to_numpy(), np.arange(1, len(states) + 1)):
        raise ValueError(f"{folder / 'election88_states.csv'}: states must be 1..{len(states)}")
    state_region = states["region"].to_numpy()[respondents["state"].to_numpy() - 1]
    if not np.array_equal(state_region, respondents["region"].to_numpy()):
        raise ValueError(f"{folder}: respondent regions disagree with the state table")

    columns = {
        "y": jnp.asarray(respondents["y"], dtype=jnp.int32),
        "female": jnp.asarray(respondents["female"], dtype=jnp.float32),
        "black": jnp.asarray(respondents["black"], dtype=jnp.float32),
        "age": jnp.asarray(respondents["age"] - 1, dtype=jnp.int32),
        "edu": jnp.asarray(respondents["edu"] - 1, dtype=jnp.int32),
        "state": jnp.asarray(respondents["state"] - 1, dtype=jnp.int32),
    }
    train = {name: columns[name][train_rows] for name in _RESPONDENT_COLUMNS}
    train["state_region"] = jnp.asarray(states["region"] - 1, dtype=jnp.int32)
    train["state_v_prev"] = jnp.asarray(states["v_prev_g76_84pr"], dtype=jnp.float32)
    heldout = {name: columns[name][heldout_rows] for name in _RESPONDENT_COLUMNS}
    return Problem(
        train=train,
        heldout=heldout,
        num_heldout=num_rows - n_train,
        meta={"source": os.fspath(folder), "seed": seed, "n_train": n_train,
              "n_heldout": num_rows - n_train, "num_respondents": num_rows},
    )
