"""The presets of :func:`advi.fit`: named, frozen :class:`advi.Options` values.

``"stan"`` is ``Options()``, whose defaults (:mod:`advi.options`) are Stan's but for the
initial mean, which is the paper's (a draw from N(0, I), ``init="random"``; Stan draws it
from U(-2, 2), ``init="stan"``); ``"robust"`` overrides nine of them, here and nowhere else.

``"stan"`` is Stan's ADVI (``stan/variational/advi.hpp``, CmdStan's defaults) and the
paper's algorithm: an N(0, I) initial mean (the paper's empirical study), unit scales,
Stan's step-size sequence with the eta search, the relative-ELBO stopping rule.

``"robust"`` is this library's own algorithm, built to reach the optimum of the family and
to say when it got there:

- start: the Laplace start of :mod:`advi.laplace` (the mode by L-BFGS and the curvature
  there, as Pathfinder starts), falling back to the random start where the mode runs off
  to a boundary (hierarchical funnels);
- steps: Adam (Kingma & Ba 2015) at a constant eta = 0.1, each mean coordinate's step
  scaled by q's own standard deviation (:func:`advi.step.precondition_by_scale`), so that
  one eta fits models whatever the scale of their parameters; no eta search (the
  preconditioned steps need none, and Stan's search spends iterations on trial etas). Its
  second-moment average has b2 = 0.99 (a memory of about 100 iterations) rather than
  optax's 0.999 (1,000), because with 0.999 the step sizes keep drifting through the first
  stationarity windows and the stop comes later at the same accuracy
  (measurements: benchmarks/README.md, "Measurements behind the library's defaults");
- stop: split R-hat of the iterates over the second half of the run below 1.1, or the
  ELBO's gain across that window (the last doubling of the run) below ``tol_rel_obj`` =
  0.001 of its size, then the iterate average over the window, or over its last chunks
  where the iterates still drift (:mod:`advi.stationarity`;
  Dhaka et al. 2020, Welandawe et al. 2022), instead of Stan's relative-ELBO rule;
- precision: float32, refitted in float64 where float32 cannot resolve q at the Laplace
  start's mode (``dtype="auto"``, :mod:`advi.precision`: unstandardised data such as a
  mean of 1e6 with sd 0.1);
- draws per gradient by family (``grad_samples=None``): 1 for mean-field,
  :data:`FULLRANK_GRAD_SAMPLES` for full-rank.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .options import OPTIONS, Options

FULLRANK_GRAD_SAMPLES = 32
"""M, the draws of eps averaged per gradient estimate (paper Eq. 6; an int) of a full-rank
fit where ``grad_samples`` is None (the robust preset). The whitened steps
(:mod:`advi.whitening`) make M cheap where the posterior is Gaussian (their gradient's noise
vanishes at the optimum whatever M, and the step size grows with M,
eta / (1 + (K + 1) / M)), but where it is not, M = 1 is too noisy: on a hierarchical funnel
(eight schools) the iterates do not become stationary and can drift into the funnel, while
M = 32 stops by R-hat near the family's optimum (M = 16 ends farther off; M = 64 draws twice
as many per step) (measurements: benchmarks/README.md, "Measurements behind the library's
defaults")."""

PRESETS: Mapping[str, Options] = MappingProxyType({
    "stan": Options(),
    "robust": Options(grad_samples=None, eta=0.1, eval_elbo=50, optimizer="adam(b2=0.99)",
                      start="laplace", stop="rhat", tol_rel_obj=0.001, precondition=True,
                      dtype="auto"),
})
"""Read-only: preset name -> its :class:`advi.Options` (frozen)."""

__all__ = ["FULLRANK_GRAD_SAMPLES", "OPTIONS", "PRESETS", "resolve"]


def resolve(preset: str | Options, options: Mapping[str, object], streamed: bool = False
            ) -> Options:
    """The preset's options with those given explicitly put over them.

    Two of a preset's defaults give way where they cannot apply, never an option given
    explicitly: with ``streamed`` rows (:func:`advi.stream`) the start is ``"init"`` (the
    Laplace start needs a fixed data set), and where the start is not ``"laplace"``,
    ``dtype="auto"`` becomes None (it judges float32 at the Laplace start's mode).

    Args:
        preset: "stan", "robust", or an :class:`advi.Options` to start from.
        options: explicitly given options (names from :data:`OPTIONS`).
        streamed: some model argument is streamed.

    Returns:
        a new :class:`advi.Options`, checked, with ``grad_samples`` an int (None becomes 1
        for mean-field, :data:`FULLRANK_GRAD_SAMPLES` for full-rank).

    Raises:
        ValueError: for an unknown preset, an unknown option name (pointing model keywords
            to ``model_kwargs``), or an invalid value (naming it and the valid ones).
    """
    if not isinstance(preset, Options) and (not isinstance(preset, str) or
                                            preset not in PRESETS):
        raise ValueError(f"preset={preset!r} is unknown; use one of {tuple(PRESETS)} or an "
                         "advi.Options")
    base, given = preset if isinstance(preset, Options) else PRESETS[preset], dict(options)
    if streamed and "start" not in given:
        given["start"] = "init"
    if given.get("start", base.start) != "laplace" and "dtype" not in given and (
            base.dtype == "auto"):
        given["dtype"] = None
    resolved = base.replace(**given)
    if resolved.grad_samples is None:
        resolved = resolved.replace(grad_samples=FULLRANK_GRAD_SAMPLES
                                    if resolved.family == "fullrank" else 1)
    return resolved
