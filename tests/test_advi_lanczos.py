"""advi.lanczos: upward curvature found from a few gradients where -H is indefinite, never
where it is positive definite, and a funnel's start refused without forming -H there."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import advi
import advi.curvature
from advi.curvature import whitening
from advi.lanczos import LANCZOS_MAX_STEPS, curves_upward, lanczos_steps


def _quadratic(eigenvalues: np.ndarray, seed: int = 0):
    """log p = -z^T P z / 2 + b^T z with P = V diag(eigenvalues) V^T (V random orthogonal):
    its gradient (float64, counting calls), P and the call count."""
    rng = np.random.default_rng(seed)
    vectors, _ = np.linalg.qr(rng.normal(size=(eigenvalues.size, eigenvalues.size)))
    precision = vectors @ np.diag(eigenvalues) @ vectors.T
    shift, calls = rng.normal(size=eigenvalues.size), []

    def grad(z):
        calls.append(1)
        return shift - precision @ np.asarray(z, np.float64)

    return grad, precision, calls


def _spectrum(dim: int, negative: float | None) -> np.ndarray:
    """Eigenvalues of -H spanning 1e-2 .. 1e6, the smallest replaced by ``negative``."""
    values = np.logspace(-2, 6, dim)
    if negative is not None:
        values[0] = negative
    return values


@pytest.mark.parametrize("negative, found", [(-0.5, True), (None, False)])
@pytest.mark.parametrize("whitened_by", ["saddle_free", "nearby"])
def test_upward_curvature_is_found_exactly_where_minus_h_is_indefinite(
        negative, found, whitened_by):
    """Whitened by |-H| itself, or by |-H| at a point where the spectrum was 10% off and
    had no negative value: an indefinite -H is shown in at most LANCZOS_MAX_STEPS steps; a
    positive definite one never, for all its 1e8 condition number."""
    dim = 120
    grad, precision, calls = _quadratic(_spectrum(dim, negative))
    other = _quadratic(_spectrum(dim, None) * np.linspace(0.9, 1.1, dim))[1]
    whiten, _ = whitening(precision if whitened_by == "saddle_free" else other, dim)
    zeta = np.random.default_rng(1).normal(size=dim)
    assert curves_upward(grad, zeta, whiten, np.float64) is found
    assert len(calls) <= 2 * LANCZOS_MAX_STEPS + 3


def test_float32_gradients_do_not_fake_upward_curvature():
    """A positive definite -H with gradients rounded to float32 (as the fits' are): the
    differences' rounding never reads as upward curvature, at any of 10 points."""
    dim = 100
    grad64, precision, _ = _quadratic(_spectrum(dim, None), seed=2)
    whiten, _ = whitening(precision * np.linspace(0.8, 1.2, dim), dim)

    def grad(z):
        return np.asarray(grad64(np.asarray(z, np.float32)), np.float32)

    rng = np.random.default_rng(3)
    assert not any(curves_upward(grad, rng.normal(size=dim) * 10, whiten, np.float32)
                   for _ in range(10))


def test_a_dimension_too_small_to_save_gradients_is_not_searched():
    """Below K = 4 a search would cost as much as -H by differences: no gradient is taken."""
    grad, _, calls = _quadratic(np.array([-1.0, 1.0, 2.0]))
    assert lanczos_steps(3) == 0 and not curves_upward(grad, np.zeros(3), np.ones(3),
                                                       np.float64)
    assert not calls


def test_a_zero_or_nonfinite_gradient_finds_nothing():
    for value in (0.0, np.nan):
        calls = []

        def grad(z, value=value, calls=calls):
            calls.append(1)
            return np.full(np.size(z), value)

        assert not curves_upward(grad, np.zeros(40), np.ones(40), np.float64)
        assert len(calls) <= 2


def _centred(zeta, data):
    """A centred hierarchy of 40 groups without data on its effects beyond one noisy
    observation each: theta_j ~ N(mu, tau), y_j ~ N(theta_j, 10); log tau = zeta[1], a
    half-Cauchy on tau. Its log density is unbounded as tau -> 0 (a funnel)."""
    y = data
    mu, log_tau, theta = zeta[0], zeta[1], zeta[2:]
    tau = jnp.exp(log_tau)
    prior = -jnp.log1p(tau**2) + log_tau - 0.5 * mu**2 / 25
    effects = jnp.sum(-0.5 * ((theta - mu) / tau) ** 2 - log_tau)
    return prior + effects + jnp.sum(-0.5 * ((y - theta) / 10.0) ** 2)


def test_a_funnels_start_is_refused_without_forming_minus_h_where_it_ran_away(monkeypatch):
    """In float64, the first stage's rest, whitened, climbs the neck and runs away; Lanczos
    shows the upward curvature there (-H's least eigenvalue -117 against 2e7), so -H is
    differenced once (for the whitening), not twice as without Lanczos, and the start is
    refused all the same, after the same steps. (In float32 the whitened upward curvature
    there, -0.8 against 3e4, is below the differences' rounding: -H is formed as before.)"""
    formed, original = [], advi.curvature.central_differences

    def counted(grad, zeta, dtype):
        formed.append(zeta)
        return original(grad, zeta, dtype)

    monkeypatch.setattr(advi.curvature, "central_differences", counted)
    with jax.enable_x64(True):
        y = jnp.asarray(np.random.default_rng(0).normal(size=40) * 3)
        fns = advi.log_density_functions(_centred, 42)
        zeta0 = np.random.default_rng(1).normal(size=42)
        start = advi.laplace_start(fns, advi.MEANFIELD, zeta0, y)
        assert not start.ok and len(formed) == 1
        formed.clear()
        monkeypatch.setattr(advi.laplace, "curves_upward", lambda *args: False)
        without = advi.laplace_start(fns, advi.MEANFIELD, zeta0, y)
        assert not without.ok and len(formed) == 2
        assert without.steps == start.steps
        there = -jax.hessian(_centred)(jnp.asarray(start.params.mu), y)
    assert np.min(np.linalg.eigvalsh(np.asarray(there))) < 0
