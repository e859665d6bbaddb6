"""The options of :func:`advi.fit` and their defaults, per preset: the one home of each default.

``"stan"`` is Stan's ADVI (``stan/variational/advi.hpp``, CmdStan's defaults) and the
paper's algorithm: random initial mean, unit scales, Stan's step-size sequence with the eta
search, the relative-ELBO stopping rule.

``"robust"`` is this library's own algorithm, built to reach the optimum of the family and
to say when it got there:

- start: the Laplace start of :mod:`advi.laplace` (the mode by L-BFGS and the curvature
  there, as Pathfinder starts), falling back to the random start where the mode runs off
  to a boundary (hierarchical funnels);
- steps: Adam (Kingma & Ba 2015) at a constant eta = 0.1, each mean coordinate's step
  scaled by q's own standard deviation (:func:`advi.step.precondition_by_scale`), so that
  one eta fits models whatever the scale of their parameters; no eta search (measured: the
  preconditioned steps need none, and the search costs 250 iterations). Its second-moment
  average has b2 = 0.99 (about 100 iterations) rather than optax's 0.999 (1,000): with
  0.999 the step sizes keep drifting through the first stationarity windows. Measured
  (``benchmarks/bench_accuracy.py``, ``bench_advi.py``): E1 stops after 1,400-1,450
  iterations instead of 1,850-2,000 at the same held-out score, eight schools after
  1,350-1,950 instead of 1,500-4,100; the conjugate cases stay within 0.05 sd (worst of 3 seeds);
- stop: split R-hat of the iterates over the second half of the run below 1.1, then the
  iterate average over that window (:mod:`advi.stationarity`; Dhaka et al. 2020,
  Welandawe et al. 2022), instead of the relative-ELBO rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

STARTS = ("init", "laplace")
STOPS = ("relative_elbo", "rhat")

_STAN: dict[str, Any] = {
    "family": "meanfield",
    "grad_samples": 1,
    "elbo_samples": 100,
    "eta": None,
    "adapt_iter": 50,
    "tol_rel_obj": 0.01,
    "eval_elbo": 100,
    "max_iter": 10000,
    "minibatch_size": None,
    "minibatch_plate": None,
    "checkpoint_every": None,
    "init": "random",
    "optimizer": "stan",
    "khat_samples": 1000,
    "start": "init",
    "stop": "relative_elbo",
    "precondition": False,
    "fullrank_max_dim": 5000,
}
_ROBUST = {
    **_STAN,
    "eta": 0.1,
    "eval_elbo": 50,
    "optimizer": "adam(b2=0.99)",
    "start": "laplace",
    "stop": "rhat",
    "precondition": True,
}
PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"stan": MappingProxyType(_STAN), "robust": MappingProxyType(_ROBUST)}
)
"""Read-only: preset name -> its options (a read-only mapping)."""

OPTIONS = tuple(PRESETS["stan"])
"""The option names :func:`advi.fit` accepts besides model, data, key, preset and hook."""


def resolve(preset: str, options: dict[str, Any]) -> dict[str, Any]:
    """The preset's options with those given explicitly put over them.

    Args:
        preset: "stan" or "robust".
        options: explicitly given options (names from :data:`OPTIONS`).

    Returns:
        a new dict with every name of :data:`OPTIONS`.

    Raises:
        ValueError: for an unknown preset, an unknown option name (pointing model keywords
            to ``model_kwargs``), or an unknown ``start`` / ``stop``.
    """
    if preset not in PRESETS:
        raise ValueError(f"preset={preset!r} is unknown; use one of {tuple(PRESETS)}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(
            f"unknown option(s) {unknown} for advi.fit; the options are {OPTIONS}. Keyword "
            "arguments of the model go in model_kwargs={...}"
        )
    resolved = {**PRESETS[preset], **options}
    if resolved["start"] not in STARTS:
        raise ValueError(f"start={resolved['start']!r} is unknown; use one of {STARTS}")
    if resolved["stop"] not in STOPS:
        raise ValueError(f"stop={resolved['stop']!r} is unknown; use one of {STOPS}")
    return resolved
