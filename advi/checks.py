"""Checks at the end of every :func:`advi.fit` that need no reference posterior.

A fit can stop, by either preset's rule, far from the optimum of its family: in float32 a
normal mean with a flat prior and unstandardised data (far from 0 against their sd) can end
many posterior sds off while split R-hat calls the iterates converged
(``benchmarks/bench_scale.py``). :func:`end_of_fit_warnings` looks at the returned q
for the symptoms, and each warning names the likely cause and the remedy (:data:`REMEDY`;
the gradient's warning after a run that stopped early also names running longer,
:data:`EARLY_STOPS`):

- the ELBO's gradient with respect to q's mean, in q's own units (each coordinate's
  ``sd_k * dELBO/dmu_k``, estimated from :data:`advi.check_draws.GRAD_DRAWS` draws of q
  in antithetic pairs, :func:`advi.check_draws.scaled_gradients`), both far above its
  Monte Carlo noise (a z-score above :func:`z_threshold`, the two-sided Bonferroni bound
  at level :data:`GRAD_ALPHA` over the K coordinates) and above :data:`GRAD_SHIFT`. On a
  Gaussian posterior the mean-field optimum has ``sd_k**2 = 1 / precision_kk``, so
  ``sd_k * dELBO/dmu_k`` is about minus the distance of mu_k from the optimum in q-sds
  (for a mean-field q narrower than its optimum, divided by ``sd_k / sd_k*`` as the same
  draws estimate it: :func:`optimum_factor`; a q below a fifth of its optimum's sd warns
  on its scale); the z-score alone would flag any stochastic-gradient fit given enough
  draws, the shift says the distance matters;
- Pareto k-hat (Yao et al. 2018; Vehtari et al. 2024) of the log weights ``log p - log q``
  at the gradient check's own draws (their values come with the gradients) not finite
  because they are degenerate (:func:`advi.diagnostics.degenerate_weights`, NumPy only:
  no ArviZ import at the end of every fit). A finite k-hat never warns, whatever its value
  and K: in float32, fits at their family's optimum (the gradient check silent) reach
  k-hats above Yao et al.'s 0.7, at small and large K alike (float rounding shapes the log
  weights' tail), while the gradient check catches the far-off fits that a large k-hat
  flags (measurements: benchmarks/README.md, "Measurements behind the library's
  defaults"). ``ADVIResult.pareto_khat`` reports the value from ``khat_samples`` draws of
  its own, drawn on first access: a fit does not pay for them (measurements:
  benchmarks/README.md, "Measurements behind the library's defaults");
- mean coordinates exactly where a random (or ``init``) start put them (bitwise) after at
  least one iteration: float rounding swallowed every step. Not checked after a Laplace
  start that found its mode, where the mean may rightly stay.

A Laplace start that fell back to the random start ("no usable mode") is expected on
hierarchical funnels (eight schools) and does not warn by itself; it is named as the likely
cause in the warnings above when they fire, and where the k-hat of those draws is finite
but above :data:`FELL_BACK_KHAT`, it warns that q cannot express the posterior (on the
validation suite's Lorenz bridges, mean-field fits from a random start end 1.5-55
posterior sds off, as NumPyro's SVI and Stan's ADVI do, while every check above passes).
A minibatched fit (``Target.num_data`` set) has the gradient check alone, over
:data:`advi.check_draws.MINIBATCH_GRAD_DRAWS` draws, each antithetic pair on a minibatch
of its own: the minibatch noise then enters the standard errors, so the check stays
calibrated and loses power as N/B grows (a pair's noise is about sqrt(N/B) q-sds on a
Gaussian posterior). A stop by an ELBO rule reads that noise as convergence: the Stan
preset's relative tolerance is a fraction of an ELBO that grows with N
(benchmarks/README.md, "Minibatched fits' gradient check"). Its log weights are noisy
estimates, so no k-hat is taken. A streamed fit (:mod:`advi.streaming`) is not checked:
its pool's rows, the same for every draw, would shift every pair's gradient alike.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
from jax import Array

from .check_draws import CHECK_SALT, GRAD_DRAWS
from .diagnostics import degenerate_weights, pareto_khat

GRAD_ALPHA = 1e-3
"""Family-wise false-alarm level of the gradient z-scores over the K coordinates."""

GRAD_SHIFT = 1.0
"""Smallest ``|sd_k * dELBO/dmu_k|`` that warns, in q-sds (about the distance of mu_k from
the family's optimum, module docstring): a fit more than one sd from the family's optimum
warns. The robust preset's iterate average ends well inside it, and a last iterate of the
Stan preset that ends more than one sd off is caught (measurements: benchmarks/README.md,
"Measurements behind the library's defaults")."""

NARROW_FLOOR = 0.04
"""Smallest ``c_k = (sd_k / sd_k*)**2`` by which the gradient check divides (mean-field):
q's mean is judged in the optimum's sds, ``sd_k * dELBO/dmu_k / sqrt(c_k)``, with ``c_k =
1 - dELBO/domega_k`` from the same draws (on a Gaussian posterior, Stein's identity gives
``E_q[sd_k * d log p/d zeta_k * eps_k] = -c_k``), so that a q too narrow does not hide its
offset; the floor bounds the factor to 5."""

SCALE_SHIFT = 3.0
"""Smallest ``|dELBO/domega_k|`` (omega = log sd of a mean-field q) that warns: on a
Gaussian posterior it is ``1 - (sd_k / sd_k*)**2`` with ``sd_k*`` the family's optimum, so
3 means a q sd at least twice the optimum's (a q far too narrow cannot pass 1)."""

REMEDY = ("standardise the data (centre and scale observations and predictors so that the "
          "parameters are of order 1), fit in float64 (advi.fit(..., dtype=\"float64\"); "
          "preset=\"robust\" switches by itself where float32 cannot resolve its start), or "
          "refit from another start (init=..., another rng_key)")
"""The remedy every end-of-fit warning names."""

MINIBATCH_REMEDY = f"a larger minibatch_size (less noise in each step's gradient), {REMEDY}"
"""The remedy a minibatched fit's warnings name."""

FELL_BACK_KHAT = 1.3
"""Where the Laplace start found no usable mode and the fit ran from a random start, a
Pareto k-hat of q over :data:`FELL_BACK_DRAWS` draws above this warns that q cannot express
the posterior (module docstring). On the validation suite (``benchmarks/bench_suite.py``),
such fits within 0.3 sd of the truth (eight schools, Neal's funnel) had k-hats of 0.6-1.1,
those tens of sds off (the Lorenz bridges, where NumPyro's SVI and Stan's ADVI end as far
off) 1.5-2.6."""

FELL_BACK_DRAWS = 1000
"""Draws of q behind that k-hat (the gradient check's and more, drawn the same way), as many
as the result's own k-hat (``khat_samples``): from the gradient check's 200 alone, a fit of
the Lorenz bridge with unknown scales 36 sd off read 1.10 at one set of draws and 1.79 at
another, where 1,000 read 1.84 (benchmarks/README.md)."""

GRADIENT_NOTE = "the ELBO's gradient at the fitted mean is far from zero"
"""How the gradient check's warning begins (:func:`end_of_fit_warnings`)."""

STUCK_NOTE = f"{GRADIENT_NOTE} in most coordinates"
"""How it begins where more than half of the coordinates are flagged (q as a whole, not a
few coordinates, far from the optimum): after a fit from an accepted Laplace start that its
rule stopped, :func:`advi.fit` runs the fit again from the initial q (a few flagged, as on
the paper's factorisations, do not: docs/library/generalisation.md)."""

FELL_BACK_NOTE = "the Laplace start found no usable mode"
"""How the warning that q cannot express the posterior begins (:func:`fell_back_note`):
the one end-of-fit warning that float64 would not mend (``advi.precision.float32_doubt``
is not asked about it)."""

FULLRANK_REMEDY = ("a full-rank q (family=\"fullrank\"), a reparameterisation (non-centred "
                   "hierarchies), another start (another rng_key: in a valley of log p, "
                   "where the search for the mode ends depends on where it began), or MCMC "
                   "to check")
"""The remedy of the warning that q cannot express the posterior. Another start, since in
a valley of log p the search's end is a chaotic function of its init
(docs/library/generalisation.md, "Not yet")."""

EARLY_STOPS = frozenset({"elbo settled", "max_iter", "mean", "median", "mean and median",
                         "stopped by checkpoint"})
"""``convergence_reason`` values of a run that stopped before its iterates were shown to be
stationary (the ELBO rules, the iteration cap, the user's hook): where such a fit's mean or
scales are off the optimum, running longer is a remedy too (for the robust preset, whose
result then averages the iterates where they are, :func:`advi.stationarity.averaging_chunks`,
the check's flags fall as the run lengthens)."""


def z_threshold(dim: int, alpha: float = GRAD_ALPHA) -> float:
    """Two-sided Bonferroni bound: P(max_k |z_k| > bound) <= alpha for K = ``dim``
    standard normal z-scores (3.29 for K = 1, 5.49 for K = 25,000)."""
    return NormalDist().inv_cdf(1 - alpha / (2 * max(int(dim), 1)))


def gradient_flags(mean: np.ndarray, se: np.ndarray, shift: float = GRAD_SHIFT
                   ) -> np.ndarray:
    """(K,) bool: coordinates whose ``|mean| > shift`` and ``|mean| / se >``
    :func:`z_threshold` (K) (a zero ``se`` counts as an infinite z-score; an infinite mean
    is flagged)."""
    mean, se = np.abs(np.asarray(mean, float)), np.asarray(se, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, mean / se, np.where(mean > 0, np.inf, 0.0))
    z = np.where(np.isinf(mean), np.inf, z)
    return (mean > shift) & (z > z_threshold(mean.size))


def _khat_note(log_weights: np.ndarray) -> str | None:
    """The k-hat warning's text for the gradient check's log weights, or None (module
    doc)."""
    why = degenerate_weights(log_weights)
    if why is None:
        return None
    return (f"Pareto k-hat of the fitted q over {log_weights.size} draws is not finite ({why}): "
            "the importance weights p/q are degenerate (q puts its mass where p is "
            "negligible, or log p is rounded to a few values)")


def fell_back_note(log_weights: np.ndarray, fell_back: str, family: str) -> str | None:
    """The warning that q, from a random start after a refused Laplace start, cannot
    express the posterior: k-hat of ``log_weights`` (:data:`FELL_BACK_DRAWS` draws' log p -
    log q) above :data:`FELL_BACK_KHAT` (ArviZ's PSIS, imported only here); else None."""
    khat = pareto_khat(log_weights)
    if not khat > FELL_BACK_KHAT:
        return None
    return (f"{FELL_BACK_NOTE} ({fell_back}), and Pareto k-hat of the "
            f"fitted q over {log_weights.size} draws is {khat:.2f} > {FELL_BACK_KHAT}: a "
            f"{family} Gaussian from a random start does not express this posterior, and "
            "its means may be far from the posterior's")


def _gradient_note(location: tuple[np.ndarray, ...], spread: tuple[np.ndarray, ...],
                   params: Any, pairs: int) -> str | None:
    """The gradient warning's text from the gradient check's moments over ``pairs``
    antithetic pairs of draws, or None (module doc)."""
    mean, se, n = location
    if n < 2:
        return (f"the log density's gradient is not finite at some draw of "
                f"{pairs - int(n)} of {pairs} antithetic pairs of draws "
                "of the fitted q: q is far from the posterior")
    factor = optimum_factor(params, spread)
    flags = gradient_flags(mean * factor, se * factor, GRAD_SHIFT)
    if not flags.any():
        return _scale_note(params, *spread)
    worst = int(np.argmax(np.where(flags, np.abs(mean * factor), -np.inf)))
    count = (f"{STUCK_NOTE} ({int(flags.sum())} of {mean.size})" if 2 * flags.sum() > mean.size
             else f"{GRADIENT_NOTE} in {int(flags.sum())} of {mean.size} coordinates")
    return (f"{count}: at coordinate {worst}, sd * dELBO/dmu = "
            f"{mean[worst]:.3g} (about {mean[worst] * factor[worst]:.3g} of the optimum's "
            "standard deviations from it), "
            f"{abs(mean[worst]) / se[worst] if se[worst] > 0 else math.inf:.3g} times its "
            f"Monte Carlo standard error over {int(n)} antithetic pairs of draws: the fit "
            "stopped before the optimum")


def optimum_factor(params: Any, spread: tuple[np.ndarray, ...]) -> np.ndarray:
    """(K,) float64: ``1 / sqrt(c_k)`` by which ``sd_k * dELBO/dmu_k`` becomes a distance in
    the optimum's sds (:data:`NARROW_FLOOR`), ``c_k = 1 - dELBO/domega_k`` (``spread``'s
    mean) taken at the largest value its draws allow (plus :func:`z_threshold` (K) times
    its standard error: a noisy c, on a correlated posterior, does not inflate a distance
    that the location's own draws measure exactly) and clipped to [NARROW_FLOOR, 1]. Ones
    for a full-rank q, and where ``c_k`` is not positive (log p not concave along k over
    q's draws: no Gaussian optimum to measure by) or not finite; a q wider than the
    optimum keeps q's own sds, the stricter unit."""
    mean, se, n = spread
    ones = np.ones(np.shape(mean), np.float64)
    if not hasattr(params, "omega") or n < 2:
        return ones
    c = 1.0 - np.asarray(mean, np.float64)
    with np.errstate(invalid="ignore"):
        upper = c + z_threshold(c.size) * (0.0 if se is None else np.asarray(se, np.float64))
        upper = np.where(np.isfinite(upper), upper, 1.0)
        return np.where(np.isfinite(c) & (c > 0),
                        1.0 / np.sqrt(np.clip(upper, NARROW_FLOOR, 1.0)), ones)


def _scale_note(params: Any, mean: np.ndarray, se: np.ndarray, n: np.ndarray) -> str | None:
    """The warning's text when a mean-field q's log sds are far from their optimum:
    ``dELBO/domega_k`` below ``-SCALE_SHIFT`` (sd more than twice the optimum's) beyond the
    z bound, or above ``1 - NARROW_FLOOR`` (sd below a fifth of the optimum's, ``c_k`` below
    the floor) by more than the z bound times its standard error: where q is that narrow,
    its mean's offset cannot be judged (:func:`optimum_factor`)."""
    if not hasattr(params, "omega") or n < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        narrow = (mean - (1.0 - NARROW_FLOOR)) / se > z_threshold(np.size(mean))
    flags = gradient_flags(mean, se, shift=SCALE_SHIFT) | narrow
    if not flags.any():
        return None
    worst = int(np.argmax(np.where(flags, np.abs(mean), -np.inf)))
    return (f"the ELBO's gradient with respect to q's log standard deviations is far from "
            f"zero in {int(flags.sum())} of {mean.size} coordinates: at coordinate {worst}, "
            f"dELBO/dlog(sd) = {mean[worst]:.3g} over {int(n)} antithetic pairs of draws "
            f"(q's sd there is {'too large' if mean[worst] < 0 else 'too small'}): the fit "
            "stopped before the optimum")


def end_of_fit_warnings(result: Any, compiled: Any, start_mu: Array | None,
                        fell_back: str | None,
                        rng_key: Array) -> list[str]:
    """The end-of-fit checks' warnings (module doc), each naming the cause and the remedy.

    Args:
        result: the fit's :class:`advi.ADVIResult` (its ``khat_log_weights`` are not
            drawn here).
        compiled: its :class:`advi.compiled.CompiledADVI`.
        start_mu: (K,) the mean q started from, or None after a Laplace start that found
            its mode (the mean may rightly stay there: in float32 the robust preset's
            iterate average of a mean near 1e4 can round back to the start).
        fell_back: the start's description when the Laplace start fell back to another init
            ("no usable mode"), else None.
        rng_key: key of the gradient check's draws (seeded with
            :data:`advi.check_draws.CHECK_SALT`).

    Returns:
        the warnings' texts (empty for a fit that passes; always empty when streamed).
    """
    checked = compiled.gradient_check(result.params, rng_key)
    if checked is None:
        return []
    mu, (location, spread, log_weights) = np.asarray(result.params.mu), checked
    minibatched = compiled.target.num_data is not None
    notes = [_gradient_note(tuple(np.asarray(a, float) for a in location),
                            tuple(np.asarray(a, float) for a in spread), result.params,
                            len(log_weights) // 2),
             None if minibatched else _khat_note(np.asarray(log_weights, float))]
    unmoved = 0 if start_mu is None else int(np.sum(mu == np.asarray(start_mu)))
    if result.num_iterations > 0 and unmoved:
        notes.append(f"{unmoved} of {mu.size} mean coordinates are exactly where the fit "
                     f"started after {result.num_iterations} iterations (float rounding "
                     "swallowed every step: the parameters are large for the float type)")
    remedies = [MINIBATCH_REMEDY if minibatched else REMEDY] * len(notes)
    cause = ("; likely cause: parameters or data far from order 1 (float rounding, "
             "ill-conditioning), or too few iterations" + (
                 ", or a stop that read the minibatch gradients' noise as convergence"
                 if minibatched else ""))
    if fell_back is not None:
        cause += f", and the Laplace start found no usable mode ({fell_back})"
    if notes[0] is not None and result.convergence_reason in EARLY_STOPS:
        remedies[0] = (f"run longer (a smaller tol_rel_obj or a larger max_iter: the run "
                       f"stopped by {result.convergence_reason!r} after "
                       f"{result.num_iterations} iterations), {remedies[0]}")
    texts = [f"{note}{cause}; remedy: {remedy}"
             for note, remedy in zip(notes, remedies, strict=True) if note is not None]
    if fell_back is not None and notes[1] is None:  # k-hat finite: how large?
        more = [compiled.gradient_check(result.params, rng_key, CHECK_SALT + i)[2]
                for i in range(1, FELL_BACK_DRAWS // GRAD_DRAWS)]
        note = fell_back_note(np.concatenate([log_weights, *more]).astype(float), fell_back,
                              result.approximation.family.name)
        texts += [] if note is None else [f"{note}; remedy: {FULLRANK_REMEDY}"]
    return texts
