"""Posterior means and sds from ADVI's three covariances, against known posteriors.

For each case and seed: ``advi.fit(..., preset="robust")`` (``--preset stan``: Stan's) with
the mean-field family (its own sds, "MF", and the linear-response correction, "LR":
``result.covariance("linear_response")``) and with the full-rank family ("FR"). Scored per
fit: the worst |fitted mean - true mean| / true sd over the scalar parameters, and the
median over them of |log(fitted sd / true sd)|; seconds are the fit's (compilation, start,
iterations; LR adds its Hessian), in this process (the first fit of a case compiles). Where
a latent site is constrained, means and sds are those of 4,000 constrained draws (LR: its
means are the mean-field q's, since linear response corrects covariances only, and its sds
those of draws from N(mu, Cov_LR)); else mu and the covariance's diagonal. Each fit's
warnings are counted (LR's: the fit's and its ``advi.LinearResponseWarning``): a fit more
than 1 sd off should carry one.

Cases (the exact ones as in ``bench_accuracy.py``):

- ``regression D=10, 26, 100``: conjugate linear regression, equicorrelated (0.9)
  predictors at column scales 10^-3 .. 10^4 (exact Gaussian posterior);
- ``normal-normal J=30``, ``8 schools, tau = 5 known``: exact;
- ``mixture 0.7/0.3``: two unit-variance components with known weights and unknown
  locations (the swapped labels are a second, worse mode); truth from a 2-D grid;
- ``AR(5), unknown sd``: an autoregression with unknown noise sd, against NUTS;
- ``8 schools``: unknown tau, against NumPyro NUTS (4 chains).

    python benchmarks/bench_covariance.py            # 5 seeds, about 10 minutes
    python benchmarks/bench_covariance.py --quick    # 2 seeds, no D=100, shorter NUTS
    python benchmarks/bench_covariance.py --only "regression D=100" --preset stan
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
import warnings

import bench_accuracy as acc
import bench_common as common
import numpy as np

NUM_DRAWS = 4000
TARGET_MEAN_SD, TARGET_LOG_SD = 0.1, 0.1
MIXTURE_WEIGHT = 0.7


def mixture(y, weight):
    """Two unit-variance normal components, weights (weight, 1 - weight), locations ~
    N(0, 5^2)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    locs = numpyro.sample("locs", dist.Normal(0.0, 5.0).expand([2]).to_event(1))
    mix = dist.Categorical(probs=jnp.array([weight, 1.0 - weight]))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.MixtureSameFamily(mix, dist.Normal(locs, 1.0)), obs=y)


def mixture_case(num: int = 200) -> acc.Case:
    """Data from 0.7 N(-2, 1) + 0.3 N(2, 1); the posterior of the two locations on a grid."""
    rng = np.random.default_rng(0)
    y = (np.where(rng.random(num) < MIXTURE_WEIGHT, -2.0, 2.0) + rng.normal(size=num))
    y = y.astype(np.float32)
    grid = np.linspace(-4.0, 4.0, 801)
    a, b = np.meshgrid(grid, grid, indexing="ij")
    log_p = -(a**2 + b**2) / 50.0
    for value in y.astype(np.float64):
        log_p += np.logaddexp(np.log(MIXTURE_WEIGHT) - 0.5 * (value - a) ** 2,
                              np.log(1 - MIXTURE_WEIGHT) - 0.5 * (value - b) ** 2)
    weights = np.exp(log_p - log_p.max())
    weights /= weights.sum()
    mean = np.array([np.sum(weights * a), np.sum(weights * b)])
    sd = np.sqrt(np.array([np.sum(weights * a**2), np.sum(weights * b**2)]) - mean**2)
    return acc.Case("mixture 0.7/0.3", mixture, (y, MIXTURE_WEIGHT), ("locs",), mean, sd,
                    "exact (801 x 801 grid)")


def autoregression(y, order):
    """AR(order): phi_k ~ N(0, 1), sigma ~ HalfNormal(1), y_t ~ N(sum_k phi_k y_{t-k},
    sigma^2) for t > order (conditional on the first ``order`` values)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    phi = numpyro.sample("phi", dist.Normal(0.0, 1.0).expand([order]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    lags = jnp.stack([y[order - k - 1:-k - 1] for k in range(order)], axis=-1)
    with numpyro.plate("data", y.shape[0] - order):
        numpyro.sample("y", dist.Normal(lags @ phi, sigma), obs=y[order:])


def autoregression_case(order: int = 5, num: int = 300, draws: int = 2000) -> acc.Case:
    """A stationary AR(5) series (coefficients 0.5, -0.3, 0.2, 0.1, -0.1, sd 0.5); the truth
    from NumPyro NUTS, 4 chains x ``draws``."""
    import jax
    from numpyro.infer import MCMC, NUTS

    rng = np.random.default_rng(0)
    coef = np.array([0.5, -0.3, 0.2, 0.1, -0.1])[:order]
    y = np.zeros(num + 100)
    for t in range(order, y.size):
        y[t] = coef @ y[t - order:t][::-1] + 0.5 * rng.normal()
    y = y[100:].astype(np.float32)
    start = time.perf_counter()
    mcmc = MCMC(NUTS(autoregression), num_warmup=1000, num_samples=draws, num_chains=4,
                chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), y, order)
    flat = acc.flatten(mcmc.get_samples(), ("phi", "sigma"), axis=1)
    return acc.Case(f"AR({order}), unknown sd", autoregression, (y, order), ("phi", "sigma"),
                    flat.mean(0), flat.std(0), f"NUTS 4 x {draws} "
                    f"({time.perf_counter() - start:.0f} s)", constrained=True)


@dataclasses.dataclass(frozen=True)
class Score:
    """One method's error on one fit."""

    mean_sd: float  # worst |mean error| / true sd
    log_sd: float  # median |log sd ratio|
    seconds: float
    warned: bool


def _moments(case: acc.Case, approximation, cov: np.ndarray, seed: int):
    """(means, sds) of the case's sites under N(mu, cov) in zeta-space."""
    import jax
    import jax.numpy as jnp

    import advi

    mu = np.asarray(approximation.params.mu, np.float64)
    if not case.constrained:
        return mu, np.sqrt(np.diag(cov))
    L = np.linalg.cholesky(cov + 1e-12 * np.diag(np.diag(cov)))
    dtype = approximation.params.mu.dtype
    q = advi.Approximation(advi.FULLRANK, advi.FullRankParams(
        approximation.params.mu, jnp.asarray(L, dtype)), approximation.target)
    draws = acc.flatten(q.sample(jax.random.PRNGKey(seed + 1000), NUM_DRAWS), case.sites, 1)
    return draws.mean(0), draws.std(0)


def _score(case: acc.Case, mean: np.ndarray, sd: np.ndarray, seconds: float, warned: bool
           ) -> Score:
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
        return Score(float("inf"), float("inf"), seconds, warned)
    return Score(float(np.max(np.abs(mean - case.mean) / case.sd)),
                 float(np.median(np.abs(np.log(sd / case.sd)))), seconds, warned)


def fit_scores(case: acc.Case, family: str, seed: int, preset: str = "robust"
               ) -> dict[str, Score]:
    """MF and LR (family "meanfield") or FR (family "fullrank") scores of one fit."""
    import jax

    import advi

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = advi.fit(case.model, *case.args, rng_key=jax.random.PRNGKey(seed),
                              preset=preset, family=family, khat_samples=0)
        except advi.ADVIError:
            failed = Score(np.inf, np.inf, np.nan, True)
            return {"FR": failed} if family == "fullrank" else {"MF": failed, "LR": failed}
    seconds = time.perf_counter() - start
    warned = any(issubclass(w.category, RuntimeWarning) for w in caught)
    q = result.approximation
    if family == "fullrank":
        return {"FR": _score(case, *_moments(case, q, result.covariance(), seed), seconds,
                             warned)}
    mf_mean, mf_sd = _moments(case, q, result.covariance(), seed)
    scores = {"MF": _score(case, mf_mean, mf_sd, seconds, warned)}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lr = result.covariance("linear_response")
        except ValueError:  # -Hessian not positive definite: no linear response there
            scores["LR"] = Score(np.inf, np.inf, np.nan, True)
            return scores
    lr_seconds = seconds + time.perf_counter() - start
    lr_warned = warned or any(issubclass(w.category, advi.LinearResponseWarning)
                              for w in caught)
    # linear response corrects covariances, not means: its means are q's own (E_q of each
    # site, Giordano et al. 2018), its sds those of N(mu, Cov_LR)'s constrained draws
    scores["LR"] = _score(case, mf_mean, _moments(case, q, lr, seed)[1], lr_seconds,
                          lr_warned)
    return scores


def row(case: acc.Case, seeds: list[int], preset: str = "robust") -> tuple[str, bool, int]:
    """The markdown row of one case, whether FR met the targets on every seed, and the
    number of fits more than 1 sd off without a warning."""
    per: dict[str, list[Score]] = {"MF": [], "LR": [], "FR": []}
    for seed in seeds:
        for family in ("meanfield", "fullrank"):
            for name, score in fit_scores(case, family, seed, preset).items():
                per[name].append(score)
    cells, silent = [], 0
    for name in ("MF", "LR", "FR"):
        scores = per[name]
        silent += sum(s.mean_sd > 1 and not s.warned for s in scores)
        worst_mean = max(s.mean_sd for s in scores)
        worst_sd = max(s.log_sd for s in scores)
        secs = statistics.median(s.seconds for s in scores)
        warned = sum(s.warned for s in scores)
        cells.append(f"{worst_mean:.3g} / {worst_sd:.3g} / {secs:.1f} s"
                     + (f" ({warned} warned)" if warned else ""))
    fr = per["FR"]
    met = all(s.mean_sd <= TARGET_MEAN_SD and s.log_sd <= TARGET_LOG_SD for s in fr)
    return (f"| {case.name} | {case.mean.size} | {case.reference} | {' | '.join(cells)} | "
            f"{silent} | {common.verdict(met)} |"), met, silent


def main() -> None:
    """Run the benchmark and print its table (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, no D=100")
    parser.add_argument("--seeds", type=int, default=None, help="fits per case (5)")
    parser.add_argument("--only", default="", help="cases whose name starts with this")
    parser.add_argument("--preset", default="robust", choices=("robust", "stan"),
                        help="the preset of every fit (robust)")
    args = parser.parse_args()
    seeds = list(range(args.seeds or (2 if args.quick else 5)))
    start = time.perf_counter()
    print(f"ADVI covariance benchmark: preset={args.preset!r}, JAX float32; cells: worst mean "
          "error (sd) / worst median |log sd ratio| / median seconds per fit, over "
          f"{len(seeds)} seeds")
    common.print_environment()
    print()
    nuts_draws = 1000 if args.quick else 5000
    factories = [("regression D=10", lambda: acc.regression_case(10)),
                 ("regression D=26", lambda: acc.regression_case(26)),
                 ("regression D=100", lambda: acc.regression_case(100)),
                 ("normal-normal", acc.normal_normal_case),
                 ("8 schools, tau = 5", acc.schools_known_tau_case),
                 ("mixture", mixture_case),
                 ("AR(5)", lambda: autoregression_case(draws=nuts_draws)),
                 ("8 schools (NUTS)", lambda: acc.schools_nuts_case(4, nuts_draws))]
    skip = ("regression D=100",) if args.quick else ()
    cases = [make() for name, make in factories
             if name.startswith(args.only) and name not in skip]
    print("| case | K | truth | mean-field (MF) | linear response (LR) | full-rank (FR) | "
          f"fits > 1 sd off, no warning | FR <= {TARGET_MEAN_SD} sd, {TARGET_LOG_SD} |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    silent = 0
    for case in cases:
        line, _, off = row(case, seeds, args.preset)
        silent += off
        print(line, flush=True)
    print()
    print(f"fits more than 1 sd off without a warning: {silent}; load average at the end "
          f"{common.format_load()}; total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
