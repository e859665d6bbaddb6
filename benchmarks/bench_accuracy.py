"""Accuracy of ADVI's posterior means on posteriors whose means are known.

For each case, the RMS over scalar parameters of (fitted mean - true posterior mean) / true
posterior sd, for ``advi.fit(..., preset="stan")`` and ``preset="robust"`` (mean-field,
defaults otherwise). The fitted mean is mu (the mean of q) where every latent site is
unconstrained, and otherwise the mean of 4,000 constrained draws from q. Target: robust
<= 0.5 sd on every case and seed (Stan's ADVI stops tens of sd away on the regressions).

Cases (see benchmarks/README.md):

- ``regression D=5``, ``D=10``: conjugate Bayesian linear regression, known noise sd 1,
  w_d ~ N(0, 1000^2), N = 200 rows of equicorrelated (0.9) predictors at column scales
  10^-3 .. 10^4; the posterior is Gaussian, computed exactly in float64 with numpy;
- ``8 schools, tau = 5 known``: the non-centred model with tau fixed, a linear Gaussian
  model: exact;
- ``normal-normal J=30``: centred, theta_j ~ N(mu, 1), ybar_j ~ N(theta_j, sigma_j) with
  sigma_j from 0.1 to 10, mu ~ N(0, 10^2): exact;
- ``8 schools``: non-centred with unknown tau ~ HalfCauchy(5), against a long NumPyro NUTS
  run (4 chains x 5,000 draws; the table gives its largest MCSE in posterior sd).

JAX runs in float32 (its default) unless ``--x64``; the exact posteriors are float64.

    python benchmarks/bench_accuracy.py            # 3 seeds per fit, about 3-5 minutes
    python benchmarks/bench_accuracy.py --quick    # 1 seed, a shorter NUTS reference
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import bench_common as common
import numpy as np

TARGET_SD = 0.5
NUM_DRAWS = 4000
NOISE_SD = 1.0
PRIOR_SD = 1000.0
NUM_ROWS = 200
CORRELATION = 0.9
NN_TAU, NN_PRIOR_SD = 1.0, 10.0


@dataclasses.dataclass(frozen=True)
class Case:
    """A posterior with known means: the model, its data, and the truth.

    Attributes:
        name: the row label.
        model: a NumPyro model, called as ``model(*args)``.
        args: its arrays (float32).
        sites: the latent sites, in the order of ``mean`` and ``sd`` (each raveled).
        mean, sd: (K,) float64 true posterior means and marginal standard deviations.
        reference: where the truth comes from.
        constrained: True when a site is constrained (fitted mean from draws, not mu).
    """

    name: str
    model: Callable
    args: tuple
    sites: tuple[str, ...]
    mean: np.ndarray
    sd: np.ndarray
    reference: str
    constrained: bool = False


# ----------------------------------------------------------------------------------------
# Models and their exact posteriors
# ----------------------------------------------------------------------------------------


def regression(X: Any, y: Any) -> None:
    """y ~ N(X w, NOISE_SD^2 I), w_d ~ N(0, PRIOR_SD^2): conjugate, no intercept."""
    import numpyro
    import numpyro.distributions as dist

    w = numpyro.sample("w", dist.Normal(0.0, PRIOR_SD).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("y", dist.Normal(X @ w, NOISE_SD), obs=y)


def normal_normal(ybar: Any, sigma: Any) -> None:
    """Centred: mu ~ N(0, NN_PRIOR_SD^2), theta_j ~ N(mu, NN_TAU^2), ybar_j ~ N(theta_j,
    sigma_j^2); all variances known."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, NN_PRIOR_SD))
    with numpyro.plate("groups", ybar.shape[0]):
        theta = numpyro.sample("theta", dist.Normal(mu, NN_TAU))
        numpyro.sample("ybar", dist.Normal(theta, sigma), obs=ybar)


def schools_known_tau(y: Any, sigma: Any) -> None:
    """Eight schools, non-centred, with tau = 5 known."""
    common.eight_schools(y, sigma, tau=5.0)


def gaussian_posterior(A: np.ndarray, y: np.ndarray, noise_sd: np.ndarray,
                       prior_cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and marginal sd of z | y for y ~ N(A z, diag(noise_sd^2)), z ~ N(0, prior_cov),
    in float64. The precision is scaled to unit diagonal before it is inverted, so that
    parameters on scales 10^-4 .. 10^3 cost no accuracy."""
    A, y = np.asarray(A, np.float64), np.asarray(y, np.float64)
    weighted = A / np.asarray(noise_sd, np.float64)[:, None] ** 2
    precision = np.linalg.inv(np.asarray(prior_cov, np.float64)) + A.T @ weighted
    scale = np.sqrt(np.diag(precision))
    cov = np.linalg.inv(precision / np.outer(scale, scale)) / np.outer(scale, scale)
    return cov @ (weighted.T @ y), np.sqrt(np.diag(cov))


def regression_case(num_features: int, seed: int = 0) -> Case:
    """Equicorrelated predictors at column scales 10^-3 .. 10^4; each true w_d moves y by
    about one noise sd."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-3, 4, num_features)
    corr = np.full((num_features, num_features), CORRELATION) + (1 - CORRELATION) * np.eye(
        num_features)
    X = (rng.standard_normal((NUM_ROWS, num_features)) @ np.linalg.cholesky(corr).T) * scales
    y = X @ (rng.standard_normal(num_features) / scales) + NOISE_SD * rng.standard_normal(
        NUM_ROWS)
    X, y = X.astype(np.float32), y.astype(np.float32)  # the truth is for the data fitted
    mean, sd = gaussian_posterior(X, y, np.full(NUM_ROWS, NOISE_SD),
                                  PRIOR_SD**2 * np.eye(num_features))
    return Case(f"regression D={num_features}", regression, (X, y), ("w",), mean, sd,
                "exact (conjugate)")


def schools_known_tau_case() -> Case:
    """Eight schools with tau = 5: z = (mu, theta_tilde), y = mu + 5 theta_tilde + noise."""
    y, sigma = common.eight_schools_data()
    A = np.hstack([np.ones((8, 1)), 5.0 * np.eye(8)])
    mean, sd = gaussian_posterior(A, y, sigma, np.diag([25.0] + [1.0] * 8))
    return Case("8 schools, tau = 5 known", schools_known_tau, (y, sigma),
                ("mu", "theta_tilde"), mean, sd, "exact (conjugate)")


def normal_normal_case(num_groups: int = 30, seed: int = 0) -> Case:
    """The centred normal-normal model with group sds from 0.1 to 10."""
    rng = np.random.default_rng(seed)
    sigma = np.logspace(-1, 1, num_groups)
    ybar = 3.0 + NN_TAU * rng.standard_normal(num_groups) + sigma * rng.standard_normal(
        num_groups)
    ybar, sigma = ybar.astype(np.float32), sigma.astype(np.float32)
    # z = (mu, theta): theta = mu + NN_TAU u, so cov(theta) = mu's variance + NN_TAU^2 I
    prior_cov = np.full((num_groups + 1, num_groups + 1), NN_PRIOR_SD**2)
    prior_cov[1:, 1:] += NN_TAU**2 * np.eye(num_groups)
    A = np.hstack([np.zeros((num_groups, 1)), np.eye(num_groups)])
    mean, sd = gaussian_posterior(A, ybar, sigma, prior_cov)
    return Case(f"normal-normal J={num_groups}", normal_normal, (ybar, sigma),
                ("mu", "theta"), mean, sd, "exact (conjugate)")


def flatten(values: dict, sites: tuple[str, ...], axis: int = 0) -> np.ndarray:
    """The sites' values raveled and concatenated in ``sites`` order, float64; ``axis``
    leading axes (draws, chains) are kept."""
    parts = [np.asarray(values[s], np.float64) for s in sites]
    return np.concatenate([p.reshape(p.shape[:axis] + (-1,)) for p in parts], axis=-1)


def schools_nuts_case(num_chains: int, num_draws: int) -> Case:
    """Eight schools with unknown tau, the truth from NumPyro's NUTS (target_accept 0.95,
    1,000 warm-up draws); the reference's largest MCSE / sd goes in its label."""
    import jax
    from numpyro.diagnostics import effective_sample_size
    from numpyro.infer import MCMC, NUTS

    y, sigma = common.eight_schools_data()
    start = time.perf_counter()
    mcmc = MCMC(NUTS(common.eight_schools, target_accept_prob=0.95), num_warmup=1000,
                num_samples=num_draws, num_chains=num_chains, chain_method="sequential",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), y, sigma)
    sites = ("mu", "tau", "theta_tilde")
    draws = flatten(mcmc.get_samples(group_by_chain=True), sites, axis=2)  # (C, S, K)
    ess = effective_sample_size(draws)
    worst = float(np.max(1 / np.sqrt(ess)))
    flat = draws.reshape(-1, draws.shape[-1])
    return Case("8 schools", common.eight_schools, (y, sigma), sites, flat.mean(0),
                flat.std(0), f"NUTS {num_chains} x {num_draws} (MCSE <= {worst:.3f} sd, "
                f"{time.perf_counter() - start:.0f} s)", constrained=True)


# ----------------------------------------------------------------------------------------
# Fits and the table
# ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Score:
    """One fit's error: RMS of (fitted - true mean) / true sd (nan when the fit failed),
    the worst coordinate's |fitted - true mean| / true sd, and whether an end-of-fit check
    (``advi.checks``) warned."""

    rms: float
    iterations: int
    note: str
    start: str = ""
    worst: float = math.nan
    warned: bool = False


def score(case: Case, preset: str, seed: int) -> Score:
    """Fit ``case`` with ``preset`` (mean-field) and score its posterior means."""
    import jax

    import advi

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # kept in result.warnings
        try:
            result = advi.fit(case.model, *case.args, rng_key=jax.random.PRNGKey(seed),
                              preset=preset)
        except advi.ADVIError as err:
            return Score(math.nan, 0, f"ADVIError: {str(err)[:60]}")
    if case.constrained:
        draws = result.sample(jax.random.PRNGKey(seed + 1000), NUM_DRAWS)
        fitted = flatten(draws, case.sites, axis=1).mean(0)
    else:
        fitted = flatten(result.mean(), case.sites)
    z = (fitted - case.mean) / case.sd
    start = result.start.split(" (")[0] if result.start.startswith("laplace") else result.start
    warned = any("remedy:" in w for w in result.warnings)
    return Score(float(np.sqrt(np.mean(z**2))), result.num_iterations,
                 result.convergence_reason, start, float(np.max(np.abs(z))), warned)


def alarms(scores: list[Score]) -> tuple[int, int, int, int]:
    """(false alarms, fits within 1 sd on every mean; silent misses, fits more than 1 sd off
    on some mean): a false alarm is a fit within 1 sd that warned, a silent miss a fit more
    than 1 sd off that did not (failed fits are counted in neither)."""
    good = [s for s in scores if s.worst <= 1.0]
    off = [s for s in scores if s.worst > 1.0]
    return (sum(s.warned for s in good), len(good), sum(not s.warned for s in off), len(off))


def cell(scores: list[Score]) -> str:
    """"median / worst" RMS over seeds, or the failure."""
    values = [s.rms for s in scores]
    if any(math.isnan(v) for v in values):
        failed = sum(math.isnan(v) for v in values)
        return f"{failed}/{len(values)} failed ({next(s.note for s in scores if s.note)})"
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.median(values):.3g} / {max(values):.3g}"


def report(cases: list[Case], seeds: list[int]) -> list[bool]:
    """Fit every case with both presets and seeds, print the markdown table; returns
    whether each case met the target."""
    per = "" if len(seeds) == 1 else f", median / worst of {len(seeds)} seeds"
    print(f"| case | K | truth | stan: RMS error (sd{per}) | robust: RMS error (sd{per}) "
          f"| robust iterations, stop; start | target robust <= {TARGET_SD} sd |")
    print("| --- | ---: | --- | ---: | ---: | --- | --- |")
    met: list[bool] = []
    every: list[tuple[str, Score]] = []
    for case in cases:
        scores = {p: [score(case, p, s) for s in seeds] for p in ("stan", "robust")}
        worst = max(s.rms for s in scores["robust"])
        met.append(worst <= TARGET_SD)  # nan (a failed fit) misses
        robust = scores["robust"]
        stops = (f"{'/'.join(str(s.iterations) for s in robust)} "
                 f"{', '.join(sorted({s.note for s in robust}))}; "
                 f"{', '.join(sorted({s.start for s in robust}))}")
        print(f"| {case.name} | {case.mean.size} | {case.reference} | {cell(scores['stan'])} "
              f"| {cell(scores['robust'])} | {stops} | {common.verdict(met[-1])} |",
              flush=True)
        every += [(p, s) for p, ss in scores.items() for s in ss]
    for preset in ("stan", "robust"):
        false, good, silent, off = alarms([s for p, s in every if p == preset])
        print(f"\nend-of-fit checks, {preset}: {false} of {good} fits within 1 sd of every "
              f"mean warned (false alarms); {silent} of {off} fits more than 1 sd off "
              "were silent")
    return met


def main() -> None:
    """Run the benchmark and print its report (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, NUTS 4 x 1,000")
    parser.add_argument("--seeds", type=int, default=None, help="fits per preset (3)")
    parser.add_argument("--nuts-draws", type=int, default=None, help="per chain (5,000)")
    parser.add_argument("--x64", action="store_true", help="run JAX in float64")
    args = parser.parse_args()
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    seeds = list(range(args.seeds or (1 if args.quick else 3)))
    start = time.perf_counter()
    print(f"ADVI accuracy benchmark: posterior means against known posteriors; JAX "
          f"{'float64' if args.x64 else 'float32'}, mean-field, presets' defaults")
    common.print_environment()
    print()
    cases = [regression_case(5), regression_case(10), schools_known_tau_case(),
             normal_normal_case(),
             schools_nuts_case(4, args.nuts_draws or (1000 if args.quick else 5000))]
    met = report(cases, seeds)
    print()
    print(f"load average (1, 5, 15 min) at the end: {common.format_load()}; "
          f"total {time.perf_counter() - start:.0f} s")
    print(f"{common.verdict(all(met))}  robust <= {TARGET_SD} sd on {sum(met)} of "
          f"{len(met)} cases")


if __name__ == "__main__":
    main()
