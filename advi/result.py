"""Result types of :func:`advi.fit`: the fitted approximation and its history."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from .diagnostics import pareto_khat
from .families import Family, standard_normal
from .linear_response import LR_DRAWS, covariance
from .precision import scope_of


class Approximation(NamedTuple):
    """The Gaussian q(zeta) and the map back to the model's constrained space.

    Attributes:
        family: the variational family.
        params: its parameters (``MeanFieldParams`` or ``FullRankParams``), in zeta-space.
        target: the :class:`advi.Target` fitted (its ``constrain_fn`` and ``data``).
    """

    family: Family
    params: Any
    target: Any

    def sample_zeta(self, rng_key: Array, num_samples: int) -> Array:
        """Draws from q in zeta-space, shape (num_samples, K), in q's dtype."""
        with scope_of(self.params):
            return _draw_zeta(self.family.transform, self.params, rng_key, num_samples)

    def sample(self, rng_key: Array, num_samples: int) -> dict[str, Array]:
        """Constrained draws theta = T^-1(zeta), zeta ~ q, in one compiled call (reused by
        later fits of the same model and shapes, see ``Target.cache_key``).

        Returns:
            dict latent site name -> array of shape (num_samples, *site_shape): JAX
            arrays of q's dtype, or, after a float64 fit (:mod:`advi.precision`), float64
            NumPy arrays, so that later operations keep float64 where JAX's default is
            float32. A NumPyro model's ``numpyro.deterministic`` sites are not among them:
            ``ADVIResult.to_inference_data`` adds them (by ``numpyro.infer.Predictive``),
            as does ``Predictive`` with ``ADVIResult.numpyro_guide()``.

        Raises:
            ADVIError: where some draw of a site is not finite (T^-1 overflows the float
                type at q's draws), naming the sites, the counts and the remedy.
        """
        sampler = _sampler(self.target.cache_key, self.family, self.target.constrain_fn)
        with scope_of(self.params):
            draws, bad = sampler(self.params, rng_key, num_samples, self.target.data)
            _require_finite(jax.device_get(bad), f"of {num_samples} draws", self.params)
            return _host_if_float64(draws)

    def mean(self) -> dict[str, Array]:
        """The constrained image T^-1(mu) of the mean of q (not the mean of theta); arrays
        as :meth:`sample`'s.

        Raises:
            ADVIError: where a value is not finite (as :meth:`sample`).
        """
        with scope_of(self.params):
            mean = self.target.constrain(self.params.mu)
            bad = {k: int(np.sum(~np.isfinite(np.asarray(v)))) for k, v in mean.items()}
            _require_finite(bad, "of the values of T^-1(mu)", self.params)
            return _host_if_float64(mean)


def _require_finite(bad: dict[str, Any], what: str, params: Any) -> None:
    """Raise :class:`ADVIError` where some count of ``bad`` (site -> non-finite values) is
    not 0."""
    named = {k: int(v) for k, v in bad.items() if int(v)}
    if not named:
        return
    sites = ", ".join(f"{k!r}: {v}" for k, v in named.items())
    dtype = np.dtype(jax.tree.leaves(params)[0].dtype).name
    float64 = "" if dtype == "float64" else "fit in float64 (dtype=\"float64\"), "
    raise ADVIError(
        f"constrained values are not finite ({sites} {what}): T^-1 overflows {dtype} at "
        f"q's draws, or q is far from the posterior; {float64}standardise the data, or read q "
        "in the unconstrained space (sample_zeta)")


def _host_if_float64(tree: Any) -> Any:
    """``tree`` with its float64 JAX arrays as NumPy arrays (JAX would truncate them to
    float32 in any later operation outside a float64 scope)."""
    return jax.tree.map(
        lambda x: np.asarray(x) if np.dtype(x.dtype) == np.float64 else x, tree)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _draw_zeta(transform: Callable, params: Any, rng_key: Array, num_samples: int) -> Array:
    eps = standard_normal(rng_key, (num_samples, params.mu.shape[-1]), params.mu.dtype)
    return transform(params, eps)


_SAMPLERS: dict[Any, Callable] = {}


def _sampler(cache_key: Any, family: Family, constrain_fn: Callable) -> Callable:
    """``sample(params, rng_key, num_samples, data) -> (draws, non-finite count per site)``,
    jitted; kept per
    ``cache_key`` (None: a new one each call) so that equal targets share the compiled
    code."""
    key = None if cache_key is None else (cache_key, family)
    if key in _SAMPLERS:
        return _SAMPLERS[key]

    @functools.partial(jax.jit, static_argnums=2)
    def sample(params: Any, rng_key: Array, num_samples: int, data: Any
               ) -> tuple[dict[str, Array], dict[str, Array]]:
        eps = standard_normal(rng_key, (num_samples, params.mu.shape[-1]), params.mu.dtype)
        zeta = family.transform(params, eps)
        draws = jax.vmap(constrain_fn, in_axes=(0, None))(zeta, data)
        return draws, {k: jnp.sum(~jnp.isfinite(v)) for k, v in draws.items()}

    if key is not None:
        if len(_SAMPLERS) >= 16:
            _SAMPLERS.pop(next(iter(_SAMPLERS)))
        _SAMPLERS[key] = sample
    return sample


class CheckpointInfo(NamedTuple):
    """What the checkpoint hook of :func:`advi.fit` receives.

    Attributes:
        iteration: iterations done so far.
        wall_s: optimisation seconds so far (compilation and hook time excluded).
        elbo: the latest ELBO estimate in nats, or None before the first one.
        approximation: the current :class:`Approximation`.
    """

    iteration: int
    wall_s: float
    elbo: float | None
    approximation: Approximation

    def sample(self, rng_key: Array, num_samples: int) -> dict[str, Array]:
        """Constrained draws from the current q, dict site -> (num_samples, *site_shape)."""
        return self.approximation.sample(rng_key, num_samples)


class ELBOHistory(NamedTuple):
    """One row per ELBO evaluation (every ``eval_elbo`` iterations), numpy arrays of shape (E,).

    Attributes:
        iteration: int, the iteration at which the ELBO was estimated.
        elbo: float, the ELBO estimate from ``elbo_samples`` draws, in nats.
        rel_change: float, |(elbo_prev - elbo) / elbo| (Stan's relative change).
        rel_mean: float, mean of the circular buffer of relative changes.
        rel_median: float, median of that buffer.
        eta: float, the step-size scale in use.
        wall_s: float, optimisation seconds so far (eta search included; compilation and
            checkpoint hooks excluded).
        max_rhat: float, the robust preset's split R-hat statistic (95% quantile) at that
            row (nan before the first check); None for the relative-ELBO rule. With
            ``stop="rhat"`` the ``elbo`` column is the mean of the chunk's M-draw estimates
            and the ``rel_*`` columns are nan.
    """

    iteration: np.ndarray
    elbo: np.ndarray
    rel_change: np.ndarray
    rel_mean: np.ndarray
    rel_median: np.ndarray
    eta: np.ndarray
    wall_s: np.ndarray
    max_rhat: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class ADVIResult:
    """What :func:`advi.fit` returns.

    Attributes:
        approximation: the fitted q and its constraining map (:class:`Approximation`).
        eta: the step-size scale used at the end of the run (after any restarts).
        eta_adapted: True when eta came from the eta search rather than the user.
        converged: True when the stopping rule fired.
        convergence_reason: "mean", "median", "mean and median" (the relative-ELBO rule
            that fired), "rhat" (the iterates were stationary), "max_iter" or
            "stopped by checkpoint".
        num_iterations: optimisation iterations run (eta search not counted).
        elbo_history: :class:`ELBOHistory`.
        wall_s: seconds of optimisation (the start's L-BFGS and the eta search included),
            excluding compilation and the time spent in the checkpoint hook.
        adapt_s: seconds before the main loop: the start (the Laplace start's L-BFGS) and
            the eta search (part of ``wall_s``).
        compile_s: seconds spent tracing and compiling the fit's functions (0 to a few
            hundredths after a hit of the in-process cache), not part of ``wall_s``; the
            start runs after it. Functions compiled on first need during the fit (the
            chunk that redraws non-finite draws) count here, not in ``wall_s``.
        khat_weights_fn: ``() -> (khat_samples,) float`` drawing the log weights of
            :attr:`khat_log_weights`, or None (minibatch fits, whose log p is a minibatch
            estimate, or ``khat_samples=0``).
        restarts: tuple of (iteration, failed eta, new eta) for each restart after
            non-finite draws.
        warnings: human-readable warnings issued during the fit.
        start: how the initial q was chosen ("init=random", "laplace (N L-BFGS steps)",
            or the init used when the Laplace start was refused; a second start, where
            :func:`advi.fit` made one, begins "laplace, again after a fit" or
            "init=random, again after the fit from the Laplace start").
        redraws: non-finite draws replaced during the optimisation (eta search and
            ELBO estimates not counted).
        preset: the preset the fit's options started from ("stan", "robust"; options
            given explicitly are put over it), or None where ``advi.fit`` was given an
            :class:`advi.Options` (or for a file saved without it).

    ``repr(result)`` (and ``print(result)``) is a one-line summary: family, K, preset,
    iterations, how the run stopped, the last ELBO estimate, Pareto k-hat where already
    computed, and the number of warnings.
    """

    approximation: Approximation
    eta: float
    eta_adapted: bool
    converged: bool
    convergence_reason: str
    num_iterations: int
    elbo_history: ELBOHistory
    wall_s: float
    adapt_s: float
    compile_s: float
    khat_weights_fn: Callable[[], np.ndarray] | None
    restarts: tuple[tuple[int, float, float], ...]
    warnings: tuple[str, ...]
    start: str = "init=random"
    redraws: int | None = None
    preset: str | None = None

    def __repr__(self) -> str:
        """``ADVIResult(family='meanfield', K=3, preset='stan', iterations=500,
        stopped='median' (converged), elbo=-12.3457, pareto_khat=0.42, warnings=0)``.

        Computes nothing: k-hat shows as ``not computed yet`` until :attr:`pareto_khat` has
        been read (it draws from q and imports ArviZ), and as ``none`` where no log
        weights can be drawn (``khat_weights_fn`` None); ``elbo`` is the last row of
        :attr:`elbo_history` (nan before the first estimate)."""
        elbos = np.asarray(self.elbo_history.elbo)
        elbo = float(elbos[-1]) if elbos.size else float("nan")
        if self.khat_weights_fn is None:
            khat = "none"
        elif "pareto_khat" in self.__dict__:  # functools.cached_property's value
            khat = "none" if self.pareto_khat is None else f"{self.pareto_khat:.2f}"
        else:
            khat = "not computed yet"
        how = "converged" if self.converged else "not converged"
        return (f"ADVIResult(family={self.approximation.family.name!r}, "
                f"K={int(self.approximation.target.dim)}, preset={self.preset!r}, "
                f"iterations={self.num_iterations}, "
                f"stopped={self.convergence_reason!r} ({how}), elbo={elbo:.6g}, "
                f"pareto_khat={khat}, warnings={len(self.warnings)})")

    @functools.cached_property
    def khat_log_weights(self) -> np.ndarray | None:
        """(khat_samples,) log p(zeta_s) - log q(zeta_s) for draws zeta_s from the final q,
        or None (see ``khat_weights_fn``). Drawn on first access, not by :func:`advi.fit`
        (its end-of-fit k-hat check tests the gradient check's draws, :mod:`advi.checks`),
        by the fit's compiled programs where their calls are cheap (:mod:`advi.importance`)."""
        if self.khat_weights_fn is None:
            return None
        with scope_of(self.params):
            return self.khat_weights_fn()

    @functools.cached_property
    def pareto_khat(self) -> float | None:
        """Pareto k-hat of p/q (Yao et al. 2018, ArviZ's PSIS), or None when no log weights
        were drawn. Below 0.5 q is close to the posterior, 0.5-0.7 usable, above 0.7 q is
        an unreliable approximation. An estimate from ``khat_samples`` draws, noisy near
        0.5: on a mean-field fit of a normal mean and sd (50 rows), where 100,000 draws
        give 0.48-0.49, 1,000 draws gave 0.28 to 1.04 across seeds; where it matters, draw
        more (``khat_samples``) and compare with the sample-size threshold 1 - 1/log10(S)
        of Vehtari et al. (2024, JMLR 25). Computed on first access (it imports ArviZ,
        which is slow to import)."""
        if self.khat_log_weights is None:
            return None
        return pareto_khat(self.khat_log_weights)

    @property
    def params(self) -> Any:
        """The variational parameters in zeta-space."""
        return self.approximation.params

    def sample(self, rng_key: Array, num_samples: int) -> dict[str, Array]:
        """Constrained draws, dict site -> (num_samples, *site_shape); see
        :meth:`Approximation.sample`."""
        return self.approximation.sample(rng_key, num_samples)

    def mean(self) -> dict[str, Array]:
        """The constrained image of mu."""
        return self.approximation.mean()

    def covariance(self, method: str | None = None, *, rng_key: Array | None = None,
                   num_draws: int = LR_DRAWS) -> np.ndarray:
        """The (K, K) float64 covariance of zeta (the unconstrained space): q's own
        (method None, "meanfield" or "fullrank"), or "linear_response", the corrected
        covariance of a mean-field q (Giordano, Broderick & Jordan 2018; exact on Gaussian
        posteriors, where the mean-field variances are too small; a
        ``LinearResponseWarning`` names the coordinates where the posterior is too far from
        Gaussian for it). See :func:`advi.linear_response.covariance` for the arguments,
        warnings and errors."""
        with scope_of(self.params):
            return covariance(self.approximation, method, rng_key, num_draws)

    def to_inference_data(self, num_samples: int = 1000, *, rng_key: Array,
                          num_chains: int = 1) -> Any:
        """ArviZ's data object of the installed ArviZ (``InferenceData`` in 0.x, a
        ``DataTree`` in 1.x): draws of every latent and deterministic site, the ELBO history
        and the diagnostics; see :func:`advi.interop.to_inference_data`."""
        from .interop import to_inference_data

        return to_inference_data(self, num_samples, rng_key=rng_key, num_chains=num_chains)

    def numpyro_guide(self, prefix: str = "auto") -> tuple[Any, dict[str, Array]]:
        """``(guide, params)``: q as a NumPyro ``AutoDiagonalNormal`` (mean-field) or
        ``AutoMultivariateNormal`` (full-rank) for ``numpyro.infer.Predictive(model,
        guide=guide, params=params, ...)``; see :func:`advi.interop.numpyro_guide`."""
        from .interop import numpyro_guide

        return numpyro_guide(self, prefix)

    def save(self, path: str | os.PathLike) -> None:
        """Write the fit to a portable ``.npz`` file, read back by :func:`advi.load`; see
        :func:`advi.io.save`."""
        from .io import save

        save(self, path)


class ADVIError(RuntimeError):
    """ADVI could not continue; ``result`` keeps the last finite state and its history."""

    def __init__(self, message: str, result: ADVIResult | None = None) -> None:
        super().__init__(message)
        self.result = result
