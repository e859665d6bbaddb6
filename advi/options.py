"""The options of :func:`advi.fit` as one typed, immutable value, checked once when made.

:class:`Options` holds every option; its defaults are Stan's ADVI (CmdStan's defaults,
``stan/variational/advi.hpp``) but for the initial mean, the paper's N(0, I) draw
(``init="random"``) where Stan draws U(-2, 2) (``init="stan"``). The presets of
:mod:`advi.presets` are instances of it, and ``advi.fit(model, *data, preset=...,
**overrides)`` builds one with :meth:`Options.replace`. An invalid value is a
``ValueError`` naming the option, the value and what is valid, raised where the options are
made, before any model is traced.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import optax

from .families import FAMILIES, INIT_SCHEMES
from .multistart import EXTRA_STARTS
from .precision import DTYPES
from .step_size import get_optimizer

STARTS = ("init", "laplace")
STOPS = ("relative_elbo", "rhat")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _check_int(name: str, value: Any, minimum: int = 1, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not (_is_int(value) and value >= minimum):
        what = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise ValueError(f"{name}={value!r} must be {what}")


def _check_choice(name: str, value: Any, choices: tuple[str | None, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not valid; use one of {choices}")


@dataclasses.dataclass(frozen=True)
class Options:
    """Every option of :func:`advi.fit`; the defaults are Stan's ADVI (``preset="stan"``).

    Attributes:
        family: "meanfield" (paper Section 2.3) or "fullrank".
        grad_samples: M >= 1, draws per gradient (paper Eq. 6), or None: by family, 1 for
            mean-field and 32 for full-rank (``advi.presets.FULLRANK_GRAD_SAMPLES``).
        elbo_samples: draws per ELBO estimate (Stan: 100).
        eta: step-size scale > 0, or None to run Stan's search over 100, 10, 1, 0.1, 0.01.
        adapt_iter: iterations per eta in that search (Stan: 50).
        tol_rel_obj: relative-ELBO tolerance > 0 (Stan: 0.01); with ``stop="rhat"`` the
            ELBO's relative gain across the stationarity window below which the run has
            settled (:func:`advi.stationarity.elbo_gain`; robust preset: 0.001).
        eval_elbo: iterations between ELBO estimates, or between stationarity checks.
        max_iter: the iteration cap.
        minibatch_size: B >= 1 (paper Section 2.6), or None for all the data.
        minibatch_plate: the name of the model's data plate, or None (its only plate, or
            the one called "data").
        checkpoint_every: iterations between checkpoint-hook calls, or None (eval_elbo);
            with the stationarity stop, at the first end of a chunk of ``eval_elbo``
            iterations past each multiple; before the first, the hook also runs at
            log-spaced iterations (:func:`advi.driver.checkpoint_due`).
        init: the initial mean: "random" (N(0, I)), "zero" (Algorithm 1), "stan" (U(-2, 2)).
        optimizer: "stan" (the paper's step-size sequence), an optax name with optional
            numeric arguments ("adam(b2=0.99)"), or an ``optax.GradientTransformation``.
        khat_samples: draws for Pareto k-hat, 0 skips it.
        start: "init" (from ``init``) or "laplace" (:mod:`advi.laplace`).
        stop: "relative_elbo" (Stan's rule) or "rhat" (:mod:`advi.stationarity`).
        precondition: scale the mean's steps by q's standard deviations (full-rank: steps in
            the coordinates whitened by q).
        fullrank_max_dim: the largest K allowed with family="fullrank".
        laplace_starts: L-BFGS starts of the Laplace start, >= 1: the one from the initial
            mean and laplace_starts - 1 from U(-2, 2), which move the fit to a better mode
            or warn of another mode of comparable mass (:mod:`advi.multistart`).
        dtype: the fit's float type (:mod:`advi.precision`): None (JAX's default, float32
            unless ``jax_enable_x64`` is set), "float32", "float64", or "auto" (float32,
            refitted in float64 where float32 cannot resolve q at the Laplace start's mode,
            or where a float32 fit that warned met values float32 could not carry;
            needs ``start="laplace"``).

    Raises:
        ValueError: on construction (and :meth:`replace`), naming the first invalid option,
            its value and the valid values.
    """

    family: str = "meanfield"
    grad_samples: int | None = 1
    elbo_samples: int = 100
    eta: float | None = None
    adapt_iter: int = 50
    tol_rel_obj: float = 0.01
    eval_elbo: int = 100
    max_iter: int = 10000
    minibatch_size: int | None = None
    minibatch_plate: str | None = None
    checkpoint_every: int | None = None
    init: str = "random"
    optimizer: str | optax.GradientTransformation = "stan"
    khat_samples: int = 1000
    start: str = "init"
    stop: str = "relative_elbo"
    precondition: bool = False
    fullrank_max_dim: int = 5000
    laplace_starts: int = 1 + EXTRA_STARTS
    dtype: str | None = None

    def __post_init__(self) -> None:
        _check_choice("family", self.family, tuple(FAMILIES))
        for name in ("elbo_samples", "adapt_iter", "eval_elbo", "max_iter",
                     "fullrank_max_dim", "laplace_starts"):
            _check_int(name, getattr(self, name))
        _check_int("grad_samples", self.grad_samples, optional=True)
        _check_int("khat_samples", self.khat_samples, minimum=0)
        _check_int("checkpoint_every", self.checkpoint_every, optional=True)
        _check_int("minibatch_size", self.minibatch_size, optional=True)
        eta = self.eta
        if eta is not None and not (_is_number(eta) and math.isfinite(eta) and eta > 0):
            raise ValueError(f"eta={eta!r} must be a positive finite number, or None to "
                             "adapt it")
        tol = self.tol_rel_obj
        if not (_is_number(tol) and math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol_rel_obj={tol!r} must be a positive finite number")
        if not (self.minibatch_plate is None or isinstance(self.minibatch_plate, str)):
            raise ValueError(f"minibatch_plate={self.minibatch_plate!r} must be a plate's "
                             "name (a string) or None")
        _check_choice("init", self.init, INIT_SCHEMES)
        get_optimizer(self.optimizer)  # ValueError naming it and the valid names
        _check_choice("start", self.start, STARTS)
        _check_choice("stop", self.stop, STOPS)
        if not isinstance(self.precondition, (bool, np.bool_)):
            raise ValueError(f"precondition={self.precondition!r} must be True or False")
        _check_choice("dtype", self.dtype, DTYPES)
        if self.dtype == "auto" and self.start != "laplace":
            raise ValueError("dtype='auto' measures float32's resolution at the Laplace "
                             f"start's mode and needs start='laplace' (got start={self.start!r}); "
                             "use dtype=None, 'float32' or 'float64'")

    def replace(self, **overrides: Any) -> Options:
        """A copy with ``overrides`` put over these values, checked as on construction.

        Raises:
            ValueError: for a name that is not an option (pointing model keywords to
                ``advi.fit``'s ``model_kwargs``), or an invalid value.
        """
        unknown = sorted(set(overrides) - set(OPTIONS))
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for advi.fit; the options are {OPTIONS}. Keyword "
                "arguments of the model go in model_kwargs={...}"
            )
        return dataclasses.replace(self, **overrides)


OPTIONS = tuple(field.name for field in dataclasses.fields(Options))
"""The option names :func:`advi.fit` accepts besides model, data, key, preset and hook."""
