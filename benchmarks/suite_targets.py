"""The validation suite's targets: posteriors with known means and sds, beyond the paper.

Each target is a NumPyro model (so that ADVI, NumPyro's SVI and NUTS all fit the same
unconstrained log density), a map from posterior draws to the compared quantities, and their
true means and standard deviations (float64). Five sources:

- **TensorFlow Probability's Inference Gym** (pip ``inference-gym`` with ``tfp-nightly``, the
  ``bench`` extra): every target whose data ship with the package and that carries ground
  truth (its authors' long NUTS runs). A target's density is taken in the unconstrained space
  of its ``default_event_space_bijector``: log p(T(z)) + log|det J_T(z)|, flattened to one
  vector by the gym's own ``VectorModel``; the compared quantities are its ``identity``
  sample transformation, T(z), against the ground truth of that transformation.
- **The repository's known posteriors** (exact, no extra package): conjugate regressions
  at column scales 1e-3 .. 1e4 and on 25 standardised predictors, the normal-normal model,
  eight schools with a known tau (``bench_accuracy.py``), a Gaussian process with a 1e-10
  jitter (a float64 NUTS reference), and a linear trend on an uncentred predictor (years 1980-2020:
  intercept and slope correlated -0.9998), whose posterior is computed by quadrature over
  the noise sd.
- **posteriordb's** (no extra package; ``suite_posteriordb.py``): twenty Stan models ported
  to NumPyro, against the means and sds of their reference draws (Stan's NUTS): earnings on
  height (flat priors, data near 2e4), a child's score on the mother's IQ, a two-state
  hidden Markov model, GARCH(1,1), a two-component Gaussian mixture; and a holdout added
  after the robust preset's defaults were set (AR(5), ARMA(1,1), a temperature trend on
  the year, flat-prior regressions, a basketball HMM, the non-centred eight schools,
  uncentred interactions, a GP regression, correlated predictors near 100, two ODE models,
  a regression on 24 correlated predictors and the centred eight schools).
- **Everyday models** (no extra package; ``suite_models.py``): thirty-six models as a
  user writes them (a Dirichlet-multinomial, a beta-binomial hierarchy, ordered logistic,
  Student-t and Weibull survival regressions, a wide logistic regression, a non-centred
  Poisson GLMM and stochastic volatility model, a multivariate normal with an LKJ
  correlation; and a holdout: a regularised horseshoe, a zero-inflated Poisson, a normal
  mixture, a separated logistic regression, a change point, errors in variables, a softmax
  regression; and a second holdout in ``suite_holdout.py``: negative binomial, varying
  slopes, an AR(1) near a unit root, Bradley-Terry, a random-walk spline, a truncated
  normal, counts at large exposures; and a third: probit, site occupancy, a local level, an
  exponential decay, a zero-sum ANOVA, a centred Poisson hierarchy; and a fourth in
  ``suite_fourth.py``: Laplace errors, crossed effects, a modelled noise sd, a gamma GLM,
  a zero-event arm, readings near 1.5e6, rare events), on data simulated once, against
  float64 NUTS references (the Dirichlet-multinomial's exact).
- **The paper's models**: the Poisson-exponential of Figure 3 (E0, an exact Gamma) and
  E2's hierarchical logistic regression of the 1988 election polls on the mirror's data
  (a float64 NUTS reference; ``PAPER``, not in ``FAST``).

``TARGETS`` lists them by name; ``GYM`` are the names that need the Inference Gym, and
``FAST`` the subset the tests run (no extra package, seconds each).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np
import suite_models as everyday
import suite_posteriordb as posteriordb


@dataclasses.dataclass(frozen=True)
class Problem:
    """A target made ready: the model and its arguments, the compared quantities and their
    truth.

    Attributes:
        model: a NumPyro model, called as ``model(*args)``.
        args: its data (NumPy arrays).
        quantities: ``draws -> (S, D) float64``, draws a dict of constrained site values
            with a leading draw axis (as ``advi.ADVIResult.sample`` and NumPyro return).
        mean, sd: (D,) float64, the true posterior means and standard deviations.
        dim: K, the unconstrained dimension.
    """

    model: Callable
    args: tuple
    quantities: Callable[[dict], np.ndarray]
    mean: np.ndarray
    sd: np.ndarray
    dim: int


@dataclasses.dataclass(frozen=True)
class SuiteTarget:
    """A named target, built on demand (``make()``), with where its truth comes from."""

    name: str
    source: str
    make: Callable[[], Problem]


def _sites(sites: tuple[str, ...]) -> Callable[[dict], np.ndarray]:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


def _from_case(case: accuracy.Case) -> Problem:
    return Problem(case.model, case.args, _sites(case.sites), case.mean, case.sd,
                   int(case.mean.size))


# ----------------------------------------------------------------------------------------
# The repository's own
# ----------------------------------------------------------------------------------------

TREND_YEARS = np.arange(1980, 2021, dtype=np.float64)
TREND_PRIOR_SD = (100.0, 10.0)  # intercept, slope
TREND_NOISE_PRIOR = 5.0  # sigma ~ HalfNormal(5)


def trend(year: Any, y: Any) -> None:
    """y_n ~ N(a + b year_n, sigma), a ~ N(0, 100), b ~ N(0, 10), sigma ~ HalfNormal(5),
    with the predictor left uncentred (years near 2000)."""
    import numpyro
    import numpyro.distributions as dist

    a = numpyro.sample("a", dist.Normal(0.0, TREND_PRIOR_SD[0]))
    b = numpyro.sample("b", dist.Normal(0.0, TREND_PRIOR_SD[1]))
    sigma = numpyro.sample("sigma", dist.HalfNormal(TREND_NOISE_PRIOR))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(a + b * year, sigma), obs=y)


def trend_posterior(year: np.ndarray, y: np.ndarray, grid: int = 20001
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Means and sds of (a, b, sigma) | y for :func:`trend`, in float64: (a, b) | sigma, y is
    Gaussian (conjugate, precision P = S0^-1 + X^T X / sigma^2), and sigma | y is integrated
    on a grid of ``grid`` points over [0.01, 10] sd of y against its exact marginal
    likelihood: log N(y; 0, X S0 X^T + sigma^2 I) = -n log sigma - log|P|/2 - y^T y /
    (2 sigma^2) + m^T P m / 2 + const (the determinant lemma), m the conditional mean."""
    X = np.stack([np.ones_like(year), year], axis=1)
    prior_precision = np.diag(1 / np.square(TREND_PRIOR_SD))
    sigmas = np.linspace(0.01, 10, grid) * np.std(y)
    log_w = np.empty(grid)
    moments = np.empty((grid, 2, 2))  # per sigma: (mean, second moment) of a and b
    for i, sigma in enumerate(sigmas):
        precision = prior_precision + X.T @ X / sigma**2
        cov = np.linalg.inv(precision)
        mean = cov @ (X.T @ y) / sigma**2
        log_w[i] = (-y.size * np.log(sigma) - 0.5 * np.linalg.slogdet(precision)[1]
                    - 0.5 * (y @ y) / sigma**2 + 0.5 * mean @ precision @ mean
                    - 0.5 * (sigma / TREND_NOISE_PRIOR) ** 2)
        moments[i] = np.stack([mean, mean**2 + np.diag(cov)])
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    first = np.array([*(w @ moments[:, 0]), w @ sigmas])
    second = np.array([*(w @ moments[:, 1]), w @ sigmas**2])
    return first, np.sqrt(np.maximum(second - first**2, 0.0))


def trend_problem() -> Problem:
    """The linear trend on years 1980-2020, y = 3 + 0.05 (year - 2000) + N(0, 0.5^2)."""
    rng = np.random.default_rng(0)
    y = 3.0 + 0.05 * (TREND_YEARS - 2000) + rng.normal(0.0, 0.5, TREND_YEARS.size)
    year32, y32 = TREND_YEARS.astype(np.float32), y.astype(np.float32)
    mean, sd = trend_posterior(year32.astype(np.float64), y32.astype(np.float64))
    return Problem(trend, (year32, y32), _sites(("a", "b", "sigma")), mean, sd, 3)


def standardised_regression_problem(num_features: int = 25, rows: int = 100) -> Problem:
    """The everyday regression: ``rows`` rows of ``num_features`` standardised predictors
    equicorrelated at 0.9, noise sd 1 known, w_d ~ N(0, 1000^2) (exact, conjugate)."""
    rng = np.random.default_rng(1)
    corr = np.full((num_features, num_features), 0.9) + 0.1 * np.eye(num_features)
    X = rng.standard_normal((rows, num_features)) @ np.linalg.cholesky(corr).T
    y = X @ rng.standard_normal(num_features) + rng.standard_normal(rows)
    X, y = X.astype(np.float32), y.astype(np.float32)
    mean, sd = accuracy.gaussian_posterior(X, y, np.ones(rows),
                                           accuracy.PRIOR_SD**2 * np.eye(num_features))
    return Problem(accuracy.regression, (X, y), _sites(("w",)), mean, sd, num_features)


def poisson_exponential_problem() -> Problem:
    """Figure 3's model (E0) on 20 counts: the posterior is Gamma(1 + sum x, 1 + N)."""
    from advi_repro.models import poisson_exponential

    x = np.random.default_rng(0).poisson(3.0, 20).astype(np.int32)
    shape, rate = poisson_exponential.exact_posterior(x)
    return Problem(poisson_exponential.model, (x,), _sites(("lam",)),
                   np.array([shape / rate]), np.array([np.sqrt(shape) / rate]), 1)


GP_X = np.arange(-10.0, 11.0, 2.0)
GP_K = np.array([40, 37, 29, 12, 4, 3, 9, 19, 77, 82, 33], np.int32)
GP_JITTER = 1e-10
REFERENCES = Path(__file__).resolve().parent / "suite_references.json"
"""Long float64 NUTS references of the targets with no closed form (:func:`nuts_reference`),
kept in the repository so that the suite does not rerun them."""


def gp_poisson(x: Any, k: Any) -> None:
    """posteriordb's ``gp_pois_regr``: a Poisson regression on a latent Gaussian process,
    non-centred, with a squared-exponential kernel and a jitter of 1e-10 on its diagonal:
    rho ~ Gamma(25, 4), alpha ~ HalfNormal(2), f_tilde ~ N(0, I), f = chol(K) f_tilde,
    k_n ~ Poisson(exp(f_n))."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([x.shape[0]]).to_event(1))
    cov = alpha**2 * jnp.exp(-0.5 * jnp.square(x[:, None] - x[None, :]) / rho**2)
    cov = cov + GP_JITTER * jnp.eye(x.shape[0])
    f = jnp.linalg.cholesky(cov) @ f_tilde
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=k)


def nuts_reference(name: str, model: Callable, args: tuple, sites: tuple[str, ...],
                   chains: int = 4, draws: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """Means and sds of ``sites`` from :data:`REFERENCES`, or, where it has none for
    ``name``, from NumPyro's NUTS in float64 (``chains`` x ``draws`` after as many warm-up
    draws, target_accept 0.95), written there."""
    import json

    refs = json.loads(REFERENCES.read_text()) if REFERENCES.exists() else {}
    if name not in refs:
        import jax
        from numpyro.infer import MCMC, NUTS

        with jax.enable_x64(True):
            mcmc = MCMC(NUTS(model, target_accept_prob=0.95), num_warmup=draws,
                        num_samples=draws, num_chains=chains, chain_method="sequential",
                        progress_bar=False)
            mcmc.run(jax.random.PRNGKey(0), *args)
            flat = accuracy.flatten(jax.device_get(mcmc.get_samples()), sites, axis=1)
        refs[name] = {"mean": flat.mean(0).tolist(), "sd": flat.std(0).tolist(),
                      "method": f"NumPyro NUTS float64, {chains} x {draws} draws"}
        REFERENCES.write_text(json.dumps(refs, indent=1) + "\n")
    return np.asarray(refs[name]["mean"]), np.asarray(refs[name]["sd"])


def gp_poisson_problem() -> Problem:
    """:func:`gp_poisson` on posteriordb's data (11 counts on x = -10, -8, ..., 10)."""
    sites = ("rho", "alpha", "f_tilde")
    args = (GP_X.astype(np.float32), GP_K)
    mean, sd = nuts_reference("gp_pois_regr", gp_poisson, (GP_X, GP_K), sites)
    return Problem(gp_poisson, args, _sites(sites), mean, sd, 13)


PAPER_DRAWS = 2000
"""Draws per chain (after as many warm-up) of the paper models' NUTS references: E2's
funnel takes about 300 leapfrog steps a draw in float64 (26 ms), so 4 x 5,000 would run
20 minutes."""


def paper_problem(name: str, results_dir: Path | None = None) -> Problem:
    """Experiment ``name``'s model on its training data at the paper's scale (real data
    from the mirror, made under ``results_dir`` where missing:
    ``bench_peers.load_setup``; None: the repository's ``results``), every latent site
    compared, against a float64 NUTS reference (:func:`nuts_reference`, kept under
    ``paper <name>``)."""
    import inspect

    import bench_peers
    from numpyro import handlers

    results_dir = results_dir or Path(__file__).resolve().parents[1] / "results"
    setup = bench_peers.load_setup(name, "paper", 0, str(results_dir))
    model = setup.model.func  # load_setup's partial holds the model's settings
    args = tuple(np.asarray(setup.train[k]) for k in inspect.signature(model).parameters
                 if k in setup.train)
    model = functools.partial(model, **setup.model.keywords)
    trace = handlers.trace(handlers.seed(model, 0)).get_trace(*args)
    sites = tuple(k for k, v in trace.items()
                  if v["type"] == "sample" and not v["is_observed"])
    dim = int(sum(np.size(trace[k]["value"]) for k in sites))
    wide = tuple(a.astype(np.float64) if a.dtype == np.float32 else a for a in args)
    mean, sd = nuts_reference(f"paper {name}", model, wide, sites, draws=PAPER_DRAWS)
    return Problem(model, args, _sites(sites), mean, sd, dim)


# ----------------------------------------------------------------------------------------
# The Inference Gym's
# ----------------------------------------------------------------------------------------


def gym_problem(name: str) -> Problem:
    """The Inference Gym's target ``name`` (a class of ``inference_gym.using_jax.targets``),
    flattened by its ``VectorModel``, as a NumPyro model over its unconstrained space."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from inference_gym import using_jax as gym

    target = gym.targets.VectorModel(getattr(gym.targets, name)(),
                                     flatten_sample_transformations=True)
    bijector = target.default_event_space_bijector
    dim = int(bijector.inverse_event_shape(target.event_shape)[0])
    identity = target.sample_transformations["identity"]

    def log_density(z: Any) -> Any:
        z = z.astype(target.dtype)
        x = bijector.forward(z)
        return target.unnormalized_log_prob(x) + bijector.forward_log_det_jacobian(z, 1)

    def model() -> None:
        z = numpyro.sample("z", dist.ImproperUniform(dist.constraints.real_vector, (),
                                                     (dim,)))
        numpyro.factor("log_density", log_density(z))

    @jax.jit
    def forward(z: Any) -> Any:
        return identity(bijector.forward(jnp.asarray(z, target.dtype)))

    def quantities(draws: dict) -> np.ndarray:
        return np.asarray(forward(np.asarray(draws["z"])), np.float64)

    return Problem(model, (), quantities, np.asarray(identity.ground_truth_mean, np.float64),
                   np.asarray(identity.ground_truth_standard_deviation, np.float64), dim)


GYM_NAMES = (
    "Banana", "IllConditionedGaussian", "NealsFunnel", "EightSchools",
    "BrownianMotionMissingMiddleObservations",
    "BrownianMotionUnknownScalesMissingMiddleObservations", "ConvectionLorenzBridge",
    "ConvectionLorenzBridgeUnknownScales", "SyntheticLogGaussianCoxProcess",
    "VectorizedStochasticVolatilityLogSP500Small", "VectorizedStochasticVolatilitySP500Small",
    "SyntheticItemResponseTheory", "VectorizedStochasticVolatilitySP500",
)
"""The gym's targets with ground truth and packaged data (those that need TensorFlow
Datasets downloads, the German credit and radon targets, are out; the non-vectorised
stochastic volatility models are the same densities, 50x slower to trace)."""

_OWN = (
    SuiteTarget("regression D=5", "exact (conjugate)",
                lambda: _from_case(accuracy.regression_case(5))),
    SuiteTarget("regression D=10", "exact (conjugate)",
                lambda: _from_case(accuracy.regression_case(10))),
    SuiteTarget("standardised regression D=25", "exact (conjugate)",
                standardised_regression_problem),
    SuiteTarget("8 schools, tau known", "exact (conjugate)",
                lambda: _from_case(accuracy.schools_known_tau_case())),
    SuiteTarget("normal-normal J=30", "exact (conjugate)",
                lambda: _from_case(accuracy.normal_normal_case())),
    SuiteTarget("uncentred trend", "exact (quadrature over sigma)", trend_problem),
    SuiteTarget("poisson-exponential (E0)", "exact (Gamma)", poisson_exponential_problem),
    SuiteTarget("GP Poisson, jitter 1e-10", "NUTS float64 4 x 5,000 (suite_references.json)",
                gp_poisson_problem),
    *(SuiteTarget(f"posteriordb {name}", "posteriordb (Stan NUTS, 10 x 1,000)",
                  functools.partial(posteriordb.problem, name, Problem))
      for name in posteriordb.MODELS),
    *(SuiteTarget(f"everyday {name}", "exact (Dirichlet)" if name == "dirichlet_multinomial"
                  else "NUTS float64 4 x 5,000 (suite_models.json)",
                  functools.partial(everyday.problem, name, Problem))
      for name in everyday.MODELS),
)

PAPER = (
    SuiteTarget("paper election88 (E2)", "NUTS float64 4 x 2,000 (suite_references.json)",
                functools.partial(paper_problem, "election88")),
)
"""The paper's experiments whose posteriors NUTS can reference (E2, K = 90; E1's and the
factorisations' are larger than a reference run should take), on the real data of the
mirror: not in :data:`FAST`, as their data are made by the workflow's code first."""

TARGETS: dict[str, SuiteTarget] = {
    **{t.name: t for t in _OWN},
    **{t.name: t for t in PAPER},
    **{name: SuiteTarget(name, "Inference Gym ground truth",
                         functools.partial(gym_problem, name)) for name in GYM_NAMES},
}
GYM = frozenset(GYM_NAMES)
FAST = tuple(t.name for t in _OWN)
