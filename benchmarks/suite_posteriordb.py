"""posteriordb's posteriors in the validation suite: NumPyro ports of Stan models with their
reference posteriors.

posteriordb (Magnusson et al., "posteriordb: testing, benchmarking and developing Bayesian
inference algorithms", 2024; github.com/stan-dev/posteriordb) pairs Stan models and data
with reference draws from long runs of Stan's NUTS. ``suite_posteriordb.json`` keeps, for each
posterior used here, its data and the means and standard deviations of its reference draws
(10 chains x 1,000 draws; the file says where each came from). Each model below is the Stan
model's density term for term: Stan's implicit flat priors are NumPyro's ``ImproperUniform``
on the same constraint, and its constrained transforms are NumPyro's, with their Jacobians.

- ``earn_height``: earnings (near 2e4) on height (near 66), flat priors: an uncentred
  predictor at a large scale (intercept and slope correlated -0.999).
- ``kidscore_momiq``: a child's test score on the mother's IQ (near 100), the noise sd
  half-Cauchy(2.5): an uncentred predictor.
- ``hmm_example``: a two-state hidden Markov model with unit-variance Gaussian emissions,
  the states summed out by the forward algorithm.
- ``garch11``: a GARCH(1,1) volatility model, beta1 bounded by 1 - alpha1.
- ``low_dim_gauss_mix``: a two-component Gaussian mixture with ordered means.

The holdout (:data:`HOLDOUT`), added after the robust preset's defaults were set:

- ``arK``: an AR(5) model; ``arma11``: ARMA(1,1), its errors by ``jax.lax.scan``;
- ``kilpisjarvi``: summer temperatures on the year (1952-2013, uncentred), an informative
  slope prior;
- ``nes2000``: party identification on nine predictors, flat priors;
- ``hmm_drive_0``: a two-state HMM of basketball drives, positive ordered exponential rates;
- ``eight_schools_noncentered``: the non-centred eight schools (theta compared);
- ``kidscore_interaction``, ``logearn_interaction``: regressions with an uncentred
  interaction (mother's IQ x schooling, height x sex);
- ``gp_regr``: a Gaussian-process regression, one observed vector of 11 values;
- ``logmesquite_logvash``: mesquite weights on log dimensions, flat priors;
- ``sblrc_blr``: five correlated predictors at scales near 100.

Three more, added to the holdout the same way (2026-11-30, later):

- ``lotka_volterra``: lynx and hare pelts as Lotka-Volterra populations, an ODE (by
  :func:`_rk4`) with lognormal errors;
- ``one_comp_mm_elim_abs``: a pharmacokinetic ODE with Michaelis-Menten elimination, its
  K_m and V_m weakly identified (K_m's central 99.8% spans 0.002-84);
- ``diamonds``: a regression on 24 correlated predictors (brms's polynomial terms and
  contrasts; 5,000 observations, its data in a gzip file: :data:`INLINE_MAX_CHARS`);
- ``eight_schools_centered``: the centred eight schools, a funnel, against the non-centred
  model's reference (the same posterior).
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_accuracy as accuracy
import numpy as np

DATA = Path(__file__).resolve().parent / "suite_posteriordb.json"

INLINE_MAX_CHARS = 200_000
"""A posterior's data up to this many characters of JSON is kept in ``suite_posteriordb.json``;
larger data (diamonds' 5,000 x 25 design, 2.3 MB) in a gzip file beside it,
``suite_posteriordb_<name>.json.gz``, that the entry's ``data_file`` names."""


def _flat(name: str, constraint: Any, shape: tuple[int, ...] = ()) -> Any:
    """Stan's implicit flat prior on a parameter declared with ``constraint``."""
    import numpyro
    import numpyro.distributions as dist

    return numpyro.sample(name, dist.ImproperUniform(constraint, (), shape))


def earn_height(earn: Any, height: Any) -> None:
    """earn ~ N(beta_1 + beta_2 height, sigma), flat priors on beta and sigma > 0."""
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (2,))
    sigma = _flat("sigma", dist.constraints.positive)
    numpyro.sample("earn", dist.Normal(beta[0] + beta[1] * height, sigma), obs=earn)


def kidscore_momiq(kid_score: Any, mom_iq: Any) -> None:
    """kid_score ~ N(beta_1 + beta_2 mom_iq, sigma), sigma ~ half-Cauchy(2.5), flat beta."""
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (2,))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)


def hmm_example(y: Any) -> None:
    """Two hidden states with uniform transition rows theta1, theta2 (flat on the simplex),
    positive ordered emission means mu, mu_1 ~ N(3, 1), mu_2 ~ N(10, 1), y_t ~ N(mu_z_t, 1);
    log p(y) by the forward algorithm."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(2)))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(2)))
    mu = _flat("mu", dist.constraints.positive_ordered_vector, (2,))
    numpyro.factor("mu_prior", dist.Normal(3.0, 1.0).log_prob(mu[0])
                   + dist.Normal(10.0, 1.0).log_prob(mu[1]))
    emission = dist.Normal(mu, 1.0).log_prob(y[:, None])  # (T, 2)
    numpyro.factor("y", _forward(jnp.log(jnp.stack([theta1, theta2])), emission))


def _forward(log_theta: Any, emission: Any) -> Any:
    """log p(observations) of a hidden Markov model by the forward algorithm: ``log_theta``
    (S, S) log transition probabilities [from, to], ``emission`` (T, S) log p(obs_t |
    state); no initial state distribution (the first step's emission alone, as the Stan
    models)."""
    import jax
    from jax.scipy.special import logsumexp

    def step(log_alpha: Any, log_e: Any) -> tuple[Any, None]:
        return logsumexp(log_alpha[:, None] + log_theta, axis=0) + log_e, None

    log_alpha, _ = jax.lax.scan(step, emission[0], emission[1:])
    return logsumexp(log_alpha)


def garch11(y: Any, sigma1: Any) -> None:
    """y_t ~ N(mu, sigma_t), sigma_t^2 = alpha0 + alpha1 (y_{t-1} - mu)^2 + beta1
    sigma_{t-1}^2, sigma_1 given; flat priors on mu, alpha0 > 0, alpha1 in (0, 1) and beta1 in
    (0, 1 - alpha1). beta1 = (1 - alpha1) u, u uniform on (0, 1): Stan's density is flat in
    beta1, so log(1 - alpha1) is added for the change from u."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = _flat("mu", dist.constraints.real)
    alpha0 = _flat("alpha0", dist.constraints.positive)
    alpha1 = numpyro.sample("alpha1", dist.Uniform(0.0, 1.0))
    u = numpyro.sample("u", dist.Uniform(0.0, 1.0))
    beta1 = (1.0 - alpha1) * u
    numpyro.factor("beta1_flat", jnp.log1p(-alpha1))
    first = jnp.asarray(sigma1, jnp.result_type(y, mu))

    def step(sigma: Any, y_prev: Any) -> tuple[Any, Any]:
        sigma = jnp.sqrt(alpha0 + alpha1 * jnp.square(y_prev - mu) + beta1 * sigma**2)
        return sigma, sigma

    _, rest = jax.lax.scan(step, first, y[:-1])
    numpyro.sample("y", dist.Normal(mu, jnp.concatenate([first[None], rest])), obs=y)


def low_dim_gauss_mix(y: Any) -> None:
    """y_n ~ theta N(mu_1, sigma_1) + (1 - theta) N(mu_2, sigma_2), mu ordered with N(0, 2)
    priors, sigma_k ~ half-N(0, 2), theta ~ Beta(5, 5)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp

    mu = _flat("mu", dist.constraints.ordered_vector, (2,))
    numpyro.factor("mu_prior", jnp.sum(dist.Normal(0.0, 2.0).log_prob(mu)))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]).to_event(1))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    parts = jnp.stack([jnp.log(theta) + dist.Normal(mu[0], sigma[0]).log_prob(y),
                       jnp.log1p(-theta) + dist.Normal(mu[1], sigma[1]).log_prob(y)])
    numpyro.factor("y", jnp.sum(logsumexp(parts, axis=0)))


AR_LAGS = 5
"""arK's K: the lags of posteriordb's ``arK`` data."""


def ar_k(y: Any) -> None:
    """y_t ~ N(alpha + sum_k beta_k y_{t-k}, sigma) for t > K (:data:`AR_LAGS`), alpha and
    beta_k ~ N(0, 10), sigma ~ half-Cauchy(2.5)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([AR_LAGS]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    size = y.shape[0]
    lagged = jnp.stack([y[AR_LAGS - k:size - k] for k in range(1, AR_LAGS + 1)], axis=-1)
    numpyro.sample("y", dist.Normal(alpha + lagged @ beta, sigma), obs=y[AR_LAGS:])


def arma11(y: Any) -> None:
    """ARMA(1, 1): err_t = y_t - (mu + phi y_{t-1} + theta err_{t-1}) (y_0 = mu, err_0 = 0)
    ~ N(0, sigma), mu ~ N(0, 10), phi and theta ~ N(0, 2), sigma ~ half-Cauchy(2.5)."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))

    def step(carry: tuple[Any, Any], y_t: Any) -> tuple[tuple[Any, Any], Any]:
        y_prev, err_prev = carry
        err = y_t - (mu + phi * y_prev + theta * err_prev)
        return (y_t, err), err

    _, err = jax.lax.scan(step, (mu, jnp.zeros_like(mu)), y)
    numpyro.sample("err", dist.Normal(0.0, sigma), obs=err)


def kilpisjarvi(x: Any, y: Any, pmualpha: Any, psalpha: Any, pmubeta: Any, psbeta: Any
                ) -> None:
    """Summer temperatures y on the year x (1952-2013, uncentred), alpha ~ N(pmualpha,
    psalpha), beta ~ N(pmubeta, psbeta), flat sigma > 0."""
    import numpyro
    import numpyro.distributions as dist

    alpha = numpyro.sample("alpha", dist.Normal(pmualpha, psalpha))
    beta = numpyro.sample("beta", dist.Normal(pmubeta, psbeta))
    sigma = _flat("sigma", dist.constraints.positive)
    numpyro.sample("y", dist.Normal(alpha + beta * x, sigma), obs=y)


def nes(partyid7: Any, real_ideo: Any, race_adj: Any, educ1: Any, gender: Any, income: Any,
        age_discrete: Any) -> None:
    """Party identification on ideology, race, age group (three indicators), education,
    gender and income; flat priors on beta (9) and sigma > 0."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (9,))
    sigma = _flat("sigma", dist.constraints.positive)
    columns = [jnp.ones_like(real_ideo), real_ideo, race_adj,
               *(jnp.where(age_discrete == a, 1.0, 0.0) for a in (2, 3, 4)),
               educ1, gender, income]
    numpyro.sample("partyid7", dist.Normal(jnp.stack(columns, -1) @ beta, sigma),
                   obs=partyid7)


def hmm_drive(u: Any, v: Any, alpha: Any) -> None:
    """Two hidden states (no drive, drive) with Dirichlet(alpha_k) transition rows, positive
    ordered exponential rates phi (of 1 / speed u) and lambda (of hoop distance v), phi_1,
    lambda_1 ~ N(0, 1) and phi_2, lambda_2 ~ N(3, 1); log p(u, v) by the forward algorithm
    (no initial state distribution, as the Stan model)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    theta1 = numpyro.sample("theta1", dist.Dirichlet(alpha[0]))
    theta2 = numpyro.sample("theta2", dist.Dirichlet(alpha[1]))
    phi = _flat("phi", dist.constraints.positive_ordered_vector, (2,))
    lam = _flat("lambda", dist.constraints.positive_ordered_vector, (2,))
    means = jnp.array([0.0, 3.0])
    numpyro.factor("rate_priors", jnp.sum(dist.Normal(means, 1.0).log_prob(phi))
                   + jnp.sum(dist.Normal(means, 1.0).log_prob(lam)))
    emission = (dist.Exponential(phi).log_prob(u[:, None])
                + dist.Exponential(lam).log_prob(v[:, None]))  # (N, 2)
    numpyro.factor("uv", _forward(jnp.log(jnp.stack([theta1, theta2])), emission))


def eight_schools_noncentered(y: Any, sigma: Any) -> None:
    """theta = mu + tau theta_trans, theta_trans ~ N(0, 1), y_j ~ N(theta_j, sigma_j),
    mu ~ N(0, 5), tau ~ half-Cauchy(5)."""
    import numpyro
    import numpyro.distributions as dist

    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([8]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    numpyro.sample("y", dist.Normal(mu + tau * theta_trans, sigma), obs=y)


def eight_schools_centered(y: Any, sigma: Any) -> None:
    """theta_j ~ N(mu, tau), y_j ~ N(theta_j, sigma_j), mu ~ N(0, 5), tau ~ half-Cauchy(5):
    the centred eight schools, a funnel in (theta, log tau). Its posterior over (theta, mu,
    tau) is the non-centred model's, whose reference it shares (posteriordb has none for it:
    Stan's NUTS diverges in the funnel)."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([8]).to_event(1))
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def _garch_quantities(draws: dict) -> np.ndarray:
    """(mu, alpha0, alpha1, beta1) from the latent sites (beta1 = (1 - alpha1) u)."""
    alpha1, u = (np.asarray(draws[s], np.float64) for s in ("alpha1", "u"))
    return np.stack([np.asarray(draws["mu"], np.float64), np.asarray(draws["alpha0"],
                     np.float64), alpha1, (1.0 - alpha1) * u], axis=-1)



def kidscore_interaction(kid_score: Any, mom_iq: Any, mom_hs: Any) -> None:
    """kid_score ~ N(beta_1 + beta_2 mom_hs + beta_3 mom_iq + beta_4 mom_hs mom_iq, sigma):
    an uncentred interaction, sigma ~ half-Cauchy(2.5), flat beta."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (4,))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    design = jnp.stack([jnp.ones_like(mom_iq), mom_hs, mom_iq, mom_hs * mom_iq], -1)
    numpyro.sample("kid_score", dist.Normal(design @ beta, sigma), obs=kid_score)


def logearn_interaction(earn: Any, height: Any, male: Any) -> None:
    """log earn ~ N(beta_1 + beta_2 height + beta_3 male + beta_4 height male, sigma): an
    uncentred interaction, flat priors on beta and sigma > 0."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (4,))
    sigma = _flat("sigma", dist.constraints.positive)
    design = jnp.stack([jnp.ones_like(height), height, male, height * male], -1)
    numpyro.sample("log_earn", dist.Normal(design @ beta, sigma), obs=jnp.log(earn))


def gp_regr(x: Any, y: Any) -> None:
    """y ~ N(0, K + sigma I), K_ij = alpha^2 exp(-(x_i - x_j)^2 / (2 rho^2)) (Stan's
    ``gp_exp_quad_cov``; sigma is added to the diagonal as is), rho ~ Gamma(25, 4), alpha
    ~ half-N(2), sigma ~ half-N(1)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    cov = alpha**2 * jnp.exp(-0.5 * jnp.square((x[:, None] - x[None, :]) / rho))
    cov = cov + sigma * jnp.eye(x.shape[0])
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros_like(y), cov), obs=y)


def logmesquite_logvash(weight: Any, diam1: Any, diam2: Any, canopy_height: Any,
                        total_height: Any, group: Any) -> None:
    """log weight of mesquite bushes on the logs of canopy volume, area and shape and of
    total height, and the group; flat priors on beta (6) and sigma > 0."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    beta = _flat("beta", dist.constraints.real_vector, (6,))
    sigma = _flat("sigma", dist.constraints.positive)
    design = jnp.stack([jnp.ones_like(weight), jnp.log(diam1 * diam2 * canopy_height),
                        jnp.log(diam1 * diam2), jnp.log(diam1 / diam2), jnp.log(total_height),
                        group], -1)
    numpyro.sample("log_weight", dist.Normal(design @ beta, sigma), obs=jnp.log(weight))


def blr(X: Any, y: Any) -> None:  # noqa: N803 (Stan's data name)
    """y ~ N(X beta, sigma), beta ~ N(0, 10), sigma ~ half-N(10): correlated predictors at
    scales near 100."""
    import numpyro
    import numpyro.distributions as dist

    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([X.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


ODE_STEP = 0.05
"""The step (time units) of :func:`_rk4`, which integrates the ODE models in place of Stan's
adaptive solvers (rk45 at relative 1e-5, BDF at 1e-6): its states agree with SciPy's Radau
(relative 1e-11) to 1e-7 relative at the reference means and to 4e-4 on the pharmacokinetic
model where K_m is near 0.002 (its lowest 0.1%), 0.003 of the noise sd on the log scale."""


def _rk4(rate: Callable[[Any, Any], Any], z0: Any, t0: Any, times: Any) -> Any:
    """z at each of ``times`` (increasing, after ``t0``; the same shape on every call) of
    dz/dt = rate(t, z), z(t0) = ``z0``: classic fourth-order Runge-Kutta by ``jax.lax.scan``,
    each interval in equal steps of at most :data:`ODE_STEP` (their count fixed by the
    data's times, so that the program is static)."""
    import jax
    import jax.numpy as jnp

    gaps = np.diff(np.concatenate([[float(t0)], np.asarray(times, np.float64)]))
    substeps = int(np.ceil(np.max(gaps) / ODE_STEP))

    def interval(carry: tuple[Any, Any], t_next: Any) -> tuple[tuple[Any, Any], Any]:
        t, z = carry
        h = (t_next - t) / substeps

        def step(z: Any, i: Any) -> tuple[Any, None]:
            s = t + i * h
            k1 = rate(s, z)
            k2 = rate(s + h / 2, z + h / 2 * k1)
            k3 = rate(s + h / 2, z + h / 2 * k2)
            k4 = rate(s + h, z + h * k3)
            return z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

        z, _ = jax.lax.scan(step, z, jnp.arange(substeps, dtype=h.dtype))
        return (t_next, z), z

    start = jnp.asarray(t0, jnp.result_type(z0))
    _, states = jax.lax.scan(interval, (start, z0), jnp.asarray(times, start.dtype))
    return states


def lotka_volterra(ts: Any, y_init: Any, y: Any) -> None:
    """Hudson's Bay lynx and hare pelts (1900-1920) as Lotka-Volterra populations z(t):
    du/dt = (alpha - beta v) u, dv/dt = (-gamma + delta u) v, z(0) = z_init;
    y_init ~ lognormal(log z_init, sigma), y_t ~ lognormal(log z(t), sigma) per species;
    alpha, gamma ~ N(1, 0.5), beta, delta ~ N(0.05, 0.05) (truncated at 0), z_init ~
    lognormal(log 10, 1), sigma ~ lognormal(-1, 1)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    theta = numpyro.sample("theta", dist.TruncatedNormal(
        jnp.array([1.0, 0.05, 1.0, 0.05]), jnp.array([0.5, 0.05, 0.5, 0.05]), low=0.0
    ).to_event(1))
    z_init = numpyro.sample("z_init", dist.LogNormal(jnp.log(10.0), 1.0).expand([2])
                            .to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(-1.0, 1.0).expand([2]).to_event(1))
    alpha, beta, gamma, delta = theta

    def rate(_: Any, z: Any) -> Any:
        return jnp.stack([(alpha - beta * z[1]) * z[0], (-gamma + delta * z[0]) * z[1]])

    z = _rk4(rate, z_init, 0.0, ts)  # (N, 2)
    numpyro.sample("y_init", dist.LogNormal(jnp.log(z_init), sigma).to_event(1), obs=y_init)
    numpyro.sample("y", dist.LogNormal(jnp.log(z), sigma).to_event(2), obs=y)


def one_comp_mm_elim_abs(t0: Any, D: Any, V: Any, times: Any, C_hat: Any  # noqa: N803
                         ) -> None:
    """A one-compartment pharmacokinetic model: a dose D absorbed at rate k_a into volume
    V, eliminated by Michaelis-Menten kinetics, dC/dt = exp(-k_a t) D k_a / V - (V_m / V) C
    / (K_m + C), C(t0) = 0; C_hat ~ lognormal(log C, sigma); k_a, K_m, V_m, sigma ~
    half-Cauchy(1). (Stan's model sets the dose term to 0 at t = 0 alone, which leaves
    the solution unchanged.)"""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    k_a = numpyro.sample("k_a", dist.HalfCauchy(1.0))
    k_m = numpyro.sample("K_m", dist.HalfCauchy(1.0))
    v_m = numpyro.sample("V_m", dist.HalfCauchy(1.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(1.0))

    def rate(t: Any, c: Any) -> Any:
        return jnp.exp(-k_a * t) * D * k_a / V - (v_m / V) * c / (k_m + c)

    conc = _rk4(rate, jnp.zeros((), jnp.result_type(k_a)), t0, times)
    numpyro.sample("C_hat", dist.LogNormal(jnp.log(conc), sigma), obs=C_hat)


def diamonds(Y: Any, X: Any) -> None:  # noqa: N803 (Stan's data names)
    """log price of 5,000 diamonds on 24 predictors (brms: carat, its polynomial terms,
    orthogonal-polynomial contrasts of cut, colour and clarity), centred, Y ~ N(Intercept
    + X_c b, sigma); b ~ N(0, 1), Intercept ~ t_3(8, 10), sigma ~ half-t_3(0, 10): predictors
    correlated up to 0.99, the posterior's condition number near 1e5."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    centred = X[:, 1:] - jnp.mean(X[:, 1:], axis=0)
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([centred.shape[1]]).to_event(1))
    intercept = numpyro.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))
    sigma = _flat("sigma", dist.constraints.positive)
    numpyro.factor("sigma_prior", dist.StudentT(3.0, 0.0, 10.0).log_prob(sigma))
    numpyro.sample("Y", dist.Normal(intercept + centred @ b, sigma), obs=Y)


def _schools_quantities(draws: dict) -> np.ndarray:
    """(theta (8), mu, tau) from the latent sites (theta = mu + tau theta_trans)."""
    trans, mu, tau = (np.asarray(draws[s], np.float64) for s in ("theta_trans", "mu", "tau"))
    return np.concatenate([mu[:, None] + tau[:, None] * trans, mu[:, None], tau[:, None]],
                          axis=-1)


def _sites(*sites: str) -> Callable[[dict], np.ndarray]:
    return lambda draws: accuracy.flatten(draws, sites, axis=1)


MODELS: dict[str, tuple[Callable[..., None], Callable[[dict], np.ndarray], int]] = {
    "earn_height": (earn_height, _sites("beta", "sigma"), 3),
    "kidscore_momiq": (kidscore_momiq, _sites("beta", "sigma"), 3),
    "hmm_example": (hmm_example, _sites("theta1", "theta2", "mu"), 4),
    "garch11": (garch11, _garch_quantities, 4),
    "low_dim_gauss_mix": (low_dim_gauss_mix, _sites("mu", "sigma", "theta"), 5),
    "arK": (ar_k, _sites("alpha", "beta", "sigma"), 7),
    "arma11": (arma11, _sites("mu", "phi", "theta", "sigma"), 4),
    "kilpisjarvi": (kilpisjarvi, _sites("alpha", "beta", "sigma"), 3),
    "nes2000": (nes, _sites("beta", "sigma"), 10),
    "hmm_drive_0": (hmm_drive, _sites("theta1", "theta2", "phi", "lambda"), 6),
    "eight_schools_noncentered": (eight_schools_noncentered, _schools_quantities, 10),
    "kidscore_interaction": (kidscore_interaction, _sites("beta", "sigma"), 5),
    "logearn_interaction": (logearn_interaction, _sites("beta", "sigma"), 5),
    "gp_regr": (gp_regr, _sites("rho", "alpha", "sigma"), 3),
    "logmesquite_logvash": (logmesquite_logvash, _sites("beta", "sigma"), 7),
    "sblrc_blr": (blr, _sites("beta", "sigma"), 6),
    "lotka_volterra": (lotka_volterra, _sites("theta", "z_init", "sigma"), 8),
    "one_comp_mm_elim_abs": (one_comp_mm_elim_abs, _sites("k_a", "K_m", "V_m", "sigma"), 4),
    "diamonds": (diamonds, _sites("b", "Intercept", "sigma"), 26),
    "eight_schools_centered": (eight_schools_centered, _sites("theta", "mu", "tau"), 10),
}
"""Each posterior's model, the map from draws (a dict of site values with a leading draw
axis) to the reference's quantities in its order, (S, D) float64, and K."""

SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "earn_height": ("earnings-earn_height", ("earn", "height")),
    "kidscore_momiq": ("kidiq-kidscore_momiq", ("kid_score", "mom_iq")),
    "hmm_example": ("hmm_example-hmm_example", ("y",)),
    "garch11": ("garch-garch11", ("y", "sigma1")),
    "low_dim_gauss_mix": ("low_dim_gauss_mix-low_dim_gauss_mix", ("y",)),
    "arK": ("arK-arK", ("y",)),
    "arma11": ("arma-arma11", ("y",)),
    "kilpisjarvi": ("kilpisjarvi_mod-kilpisjarvi",
                    ("x", "y", "pmualpha", "psalpha", "pmubeta", "psbeta")),
    "nes2000": ("nes2000-nes", ("partyid7", "real_ideo", "race_adj", "educ1", "gender",
                                "income", "age_discrete")),
    "hmm_drive_0": ("bball_drive_event_0-hmm_drive_0", ("u", "v", "alpha")),
    "eight_schools_noncentered": ("eight_schools-eight_schools_noncentered", ("y", "sigma")),
    "kidscore_interaction": ("kidiq-kidscore_interaction", ("kid_score", "mom_iq", "mom_hs")),
    "logearn_interaction": ("earnings-logearn_interaction", ("earn", "height", "male")),
    "gp_regr": ("gp_pois_regr-gp_regr", ("x", "y")),
    "logmesquite_logvash": ("mesquite-logmesquite_logvash",
                            ("weight", "diam1", "diam2", "canopy_height", "total_height",
                             "group")),
    "sblrc_blr": ("sblrc-blr", ("X", "y")),
    "lotka_volterra": ("hudson_lynx_hare-lotka_volterra", ("ts", "y_init", "y")),
    "one_comp_mm_elim_abs": ("one_comp_mm_elim_abs-one_comp_mm_elim_abs",
                             ("t0", "D", "V", "times", "C_hat")),
    "diamonds": ("diamonds-diamonds", ("Y", "X")),
    # the same posterior over (theta, mu, tau) as the non-centred model's, its reference
    "eight_schools_centered": ("eight_schools-eight_schools_noncentered", ("y", "sigma")),
}
"""Each posterior's name in posteriordb and the data its model takes, in order
(``suite_posteriordb_build.py`` stores them)."""

HOLDOUT = ("arK", "arma11", "kilpisjarvi", "nes2000", "hmm_drive_0",
           "eight_schools_noncentered", "kidscore_interaction", "logearn_interaction",
           "gp_regr", "logmesquite_logvash", "sblrc_blr", "lotka_volterra",
           "one_comp_mm_elim_abs", "diamonds", "eight_schools_centered")
"""Posteriors added after the robust preset's defaults were set (2026-11-30): none of its
constants was chosen on them, so they test its generality afresh."""


@functools.cache
def _stored() -> dict[str, Any]:
    return json.loads(DATA.read_text())["posteriors"]


def data(name: str) -> dict[str, Any]:
    """The stored data of posterior ``name`` (the names :data:`SOURCES` keeps, in order, to
    JSON values), from ``suite_posteriordb.json`` or the gzip file its entry names
    (:data:`INLINE_MAX_CHARS`)."""
    stored = _stored()[name]
    if "data" in stored:
        return stored["data"]
    return json.loads(gzip.decompress((DATA.parent / stored["data_gz"]).read_bytes()))


def problem(name: str, make: Callable[..., Any]) -> Any:
    """The posterior ``name`` of :data:`MODELS` as ``make(model, args, quantities, mean, sd,
    dim)`` (``suite_targets``' Problem): its data as float32 arrays in the Stan data's
    order, and its reference means and sds (float64)."""
    model, quantities, dim = MODELS[name]
    stored = _stored()[name]
    args = tuple(np.asarray(v, np.float32) for v in data(name).values())
    return make(model, args, quantities, np.asarray(stored["mean"], np.float64),
                np.asarray(stored["sd"], np.float64), dim)
