"""The initial mean of q, drawn again until the log density and its gradient are finite
there (:meth:`advi.compiled.CompiledADVI.setup`, wherever the value and gradient are
compiled anyway: with the Laplace start, or for the end-of-fit checks of a fit on all its
data).

Stan draws its random inits again, up to 100 times, until log p and its gradient are finite
(``stan::services::util::initialize``, ``MAX_INIT_TRIES``), as NumPyro's
``find_valid_initial_params`` does for its samplers. Without it, an ODE whose populations
float32 rounds to 0 at the first draw (posteriordb's Lotka-Volterra model, at one seed of
three) gave the L-BFGS search a point with log p = -inf: it took no step and the start was
refused, for all that a mode was there to find; and the Stan preset raised (its initial
ELBO not finite).

There, too, a latent coordinate on which log p does not depend at all is refused
(:func:`refuse_flat`): the posterior is improper along it, and q's scale there grows
without bound until the fit fails. NumPyro's ``obs_mask`` makes such coordinates: its
``<name>_unobserved`` site holds every element of the observed site, and those observed
carry no density (NumPyro's docstring: "not intended to be used with MCMC")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

logger = logging.getLogger("advi")

INIT_TRIES = 100
"""Initial means drawn in all before the first one is kept whatever log p is there (Stan's
``MAX_INIT_TRIES``)."""

FAILING_PROBES = 10
"""Draws at which :func:`failing_draws` evaluates log p."""


def finite_start(value_and_grad: Callable[[np.ndarray], Any],
                 draw: Callable[[int], np.ndarray], mu: np.ndarray) -> tuple[np.ndarray, int]:
    """The first of ``mu``, ``draw(1)``, ``draw(2)``, ... (up to :data:`INIT_TRIES` means in
    all) where log p and its gradient are finite, and how many were drawn again to find it.

    Args:
        value_and_grad: ``zeta (K,) -> (log p (), grad (K,))`` on the host (any arrays NumPy
            can read).
        draw: ``try_number -> mu (K,)``, another draw of the fit's init scheme, of ``mu``'s
            dtype.
        mu: (K,) the initial mean drawn first.

    Returns:
        (mu (K,), redraws); where no draw is finite, ``mu`` as given and
        ``INIT_TRIES - 1`` (the fit goes on from it: its chunks redraw non-finite draws
        of q, and the Laplace start is refused).
    """
    here = mu
    for tries in range(INIT_TRIES):
        if tries:
            here = draw(tries)
        value, grad = value_and_grad(here)
        if np.isfinite(value) and np.all(np.isfinite(grad)):
            return here, tries
    return mu, INIT_TRIES - 1


def finite_params(value_and_grad: Callable[[np.ndarray, Any], Any], family: Any, params: Any,
                  data: Any, scheme: str, seed: int, unravel: Callable | None = None) -> Any:
    """``params`` (the family's, NumPy arrays) with their mean from :func:`finite_start`
    (redraws are logged): ``value_and_grad(zeta, data)`` is the compiled log density's;
    the draws again are ``family.init`` of the fit's ``scheme`` by NumPy generators seeded
    (``seed``, try) (the same on every run). ``scheme`` "zero" is not drawn again (Stan's
    init=0 is not either). Then :func:`refuse_flat` at that mean and one more random draw
    (``unravel`` names the sites).

    Raises:
        ValueError: from :func:`refuse_flat`.
    """
    mu = np.asarray(params.mu)

    def draw(tries: int, how: str = scheme) -> np.ndarray:
        again = family.init(np.random.default_rng([seed, tries]), mu.size, how)
        return np.asarray(again.mu, mu.dtype)

    def host(zeta: np.ndarray) -> Any:
        return jax.device_get(value_and_grad(zeta, data))

    found, redraws = (mu, 0) if scheme == "zero" else finite_start(host, draw, mu)
    refuse_flat([host(found)[1], host(draw(INIT_TRIES, "random"))[1]], unravel)
    if not redraws:
        return params
    logger.info("log p not finite at the initial mean: drawn %d more", redraws)
    return params._replace(mu=found)


def refuse_flat(grads: list[np.ndarray], unravel: Callable[[Any], dict] | None = None
                ) -> None:
    """Raise where log p does not depend on some coordinates of zeta: its gradient, at
    every point of ``grads`` ((K,) each, two or more independent points), exactly 0 there.

    Raises:
        ValueError: naming the coordinates (their sites and counts, by ``unravel``, zeta
            (K,) -> {site: array}, where given) and what would be valid.
    """
    flat = np.all([np.asarray(g) == 0 for g in grads], axis=0)
    if not np.any(flat):
        return
    if unravel is None:
        where = f"coordinates {np.flatnonzero(flat)[:10].tolist()} of zeta"
    else:
        counts = {site: (int(np.sum(v)), int(np.size(v)))
                  for site, v in unravel(flat.astype(np.float32)).items() if np.any(v)}
        where = ", ".join(f"{n} of the {size} of latent site {site!r}"
                          for site, (n, size) in counts.items())
    raise ValueError(
        f"log p does not depend on {int(np.sum(flat))} unconstrained coordinates ({where}): "
        f"its gradient there is exactly 0 at {len(grads)} random points, so the posterior is "
        "improper along them and q would spread without bound. Give each latent coordinate "
        "a prior, or remove it; NumPyro's obs_mask makes such a site (name_unobserved holds "
        "every element, the observed ones without density): declare only the missing "
        "values as a latent site instead")


def failing_draws(value_and_grad: Callable[[np.ndarray, Any], Any], centre: np.ndarray,
                  params: Any, data: Any, seed: int, probes: int = FAILING_PROBES
                  ) -> np.ndarray:
    """The draws of N(``centre``, q's covariance) at which log p or its gradient is not
    finite: (n, K) of ``probes`` draws, NumPy's generator seeded (``seed``, ``probes``), in
    q's dtype, each evaluated by the compiled ``value_and_grad(zeta, data)`` (nothing
    compiled). ``centre`` (K,): where a refused Laplace start's search ended; ``params``:
    the initial q's (mean-field or full-rank, NumPy arrays), whose scales the fit starts
    from. :func:`advi.precision.float32_shortfall` reads them."""
    mu = np.asarray(params.mu)
    eps = np.random.default_rng([seed, probes]).standard_normal((probes, mu.size))
    spread = (eps * np.exp(np.asarray(params.omega, np.float64)) if hasattr(params, "omega")
              else eps @ np.tril(np.asarray(params.L, np.float64)).T)
    draws = np.asarray(np.asarray(centre, np.float64) + spread, mu.dtype)
    failed = [not (np.isfinite(value) and np.all(np.isfinite(grad))) for value, grad in
              (jax.device_get(value_and_grad(zeta, data)) for zeta in draws)]
    return draws[np.asarray(failed, bool)]
