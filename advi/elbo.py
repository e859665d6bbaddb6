"""The reparameterised ELBO estimate and its gradient (paper Sections 2.4-2.5, Eqs. 4-6).

With zeta = T(eps; params) (the family's elliptical standardisation) and M draws eps_m,

    ELBO ~= (1/M) sum_m log p(X, T^-1(zeta_m)) + log|det J(zeta_m)|  +  H[q],

and its gradient is the vector-Jacobian product of the per-draw gradients g_m =
grad_zeta log p(zeta_m) with the transform, plus the closed-form entropy gradient. For the
mean-field family this is exactly the paper's Eq. 6: grad_mu = mean_m g_m and
grad_omega = mean_m (g_m * eps_m) * exp(omega) + 1.

Non-finite draws: a draw whose log density or gradient is not finite is redrawn, at most
``10 * M`` redraws per estimate for the gradient and ``elbo_samples`` for the ELBO value (as
Stan: ``normal_meanfield::calc_grad`` and ``advi::calc_ELBO``, where a log density that is
not finite stands for Stan's rejection of the draw); the returned ``ok`` flag is False when
that budget ran out. With ``with_elbo=False`` the gradient estimate computes the log
density's gradient only and redraws where that is not finite, which is all Stan's
``calc_grad`` checks: XLA then drops whatever only the value needs (on a Poisson likelihood,
the log of every rate: 0.6 of a gradient's time on the paper's E3). :func:`advi.fit` runs
such steps and checks the log density's values at the end of each chunk of iterations
(:mod:`advi.compiled`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from .families import FULLRANK, Family, FullRankParams, computed_once, standard_normal

REDRAW_FACTOR = 10


class _Draws(NamedTuple):
    eps: Array  # (M, K)
    value: Array  # (M,) log density per draw
    grad: Array  # (M, K) gradient per draw, or (M, 0) when only values are wanted
    bad: Array  # (M,) bool, draw still non-finite
    redraws: Array  # () int32, redraws spent
    key: Array


def _within_budget(bad: Array, redraws: Array, max_redraws: int, num: int) -> Array:
    """The redraw loops' condition: a draw is still non-finite and the budget (the first
    ``num`` evaluations and ``max_redraws`` redraws) is not spent."""
    return jnp.any(bad) & (redraws < max_redraws + num)


def _finite_draws(
    evaluate: Callable[[Array, Array], tuple[Array, Array]],
    rng_key: Array,
    shape: tuple[int, int],
    max_redraws: int,
    dtype: Any,
    grad_dim: int,
    check_value: bool = True,
    eps: Array | None = None,
) -> _Draws:
    """Draw eps (M, K) (or take ``eps``, drawn by the caller) and evaluate, redrawing
    non-finite rows from ``rng_key`` until none is left or the redraw budget is spent.
    ``evaluate(eps, keys) -> (value (M,), grad (M, grad_dim))``, cast to ``dtype``; a row is
    non-finite when its gradient has a non-finite entry or, with ``check_value``, its value
    is not finite. With ``max_redraws`` 0 the draws are evaluated once, outside any loop.
    The model is traced and compiled once, in the loop's body: a first evaluation before
    the loop (a peeled first trip) would compile the model twice, which costs a cold fit
    more than it saves per iteration (measurements: benchmarks/README.md, "Measurements
    behind the library's defaults")."""
    num, _ = shape
    given = eps

    def draw(eps_key: Array, d: _Draws) -> Array:
        if given is None:
            return standard_normal(eps_key, shape, dtype)
        if max_redraws == 0:  # no generator in the program
            return given
        # the given draws on the first trip (no redraw yet), new ones for the redraws
        return jnp.where(d.redraws == 0, given, standard_normal(eps_key, shape, dtype))

    def body(d: _Draws) -> _Draws:
        key, eps_key, batch_key = jax.random.split(d.key, 3)
        eps = jnp.where(d.bad[:, None], draw(eps_key, d), d.eps)
        value, grad = evaluate(eps, jax.random.split(batch_key, num))
        value, grad = value.astype(dtype), grad.astype(dtype)
        finite = jnp.all(jnp.isfinite(grad), axis=-1)
        bad = ~(finite & jnp.isfinite(value)) if check_value else ~finite
        return _Draws(eps, value, grad, bad, d.redraws + jnp.sum(d.bad, dtype=jnp.int32), key)

    def cond(d: _Draws) -> Array:
        return _within_budget(d.bad, d.redraws, max_redraws, num)

    start = _Draws(
        eps=jnp.zeros(shape, dtype),
        value=jnp.zeros((num,), dtype),
        grad=jnp.zeros((num, grad_dim), dtype),
        bad=jnp.ones((num,), bool),
        redraws=jnp.zeros((), jnp.int32),
        key=rng_key,
    )
    # no redraws: the one evaluation without a loop around it, which on a GPU costs a host
    # round trip per test of its condition (the same result: the loop would stop after it)
    out = body(start) if max_redraws == 0 else jax.lax.while_loop(cond, body, start)
    return out._replace(redraws=out.redraws - num)


def _per_draw(log_density: Callable[[Array, Array], Array], with_elbo: bool
              ) -> Callable[[Any, Array], tuple[Array, Array]]:
    """``(zeta (M, K), keys (M,)) -> (value (M,), grad (M, K))``; without the ELBO the
    value is zeros and only the gradient is computed."""
    if with_elbo:
        return jax.vmap(jax.value_and_grad(log_density))
    grad = jax.vmap(jax.grad(log_density))

    def grad_only(zeta: Any, keys: Array) -> tuple[Array, Array]:
        return jnp.zeros(zeta.shape[:1], zeta.dtype), grad(zeta, keys)

    return grad_only


class GradientEstimate(NamedTuple):
    """Output of :func:`elbo_grad`.

    Attributes:
        elbo: () float, the M-draw ELBO estimate at the current parameters (nats), or None
            when the estimate was asked for without it (``with_elbo=False``).
        grad: pytree like the family's parameters, the ELBO gradient (ascent direction).
        ok: () bool, False when non-finite draws exhausted the redraw budget.
        redraws: () int32, non-finite draws replaced.
    """

    elbo: Array | None
    grad: Any
    ok: Array
    redraws: Array


def elbo_grad(
    log_density: Callable[[Array, Array], Array],
    family: Family,
    params: Any,
    rng_key: Array,
    grad_samples: int,
    *,
    with_elbo: bool = True,
    redraw: bool = True,
    eps: Array | None = None,
) -> GradientEstimate:
    """ELBO estimate and reparameterisation gradient from M = ``grad_samples`` draws.

    Args:
        log_density: ``(zeta (K,), minibatch_key) -> ()``, the target log density in zeta.
        family: the variational family.
        params: the family's parameters (mu of shape (K,) sets K).
        rng_key: PRNG key; split inside into draw and minibatch keys.
        grad_samples: M >= 1.
        with_elbo: also estimate the ELBO and redraw non-finite values (False: ``elbo`` is
            None, the log density's value is not computed, only its gradient, and only
            draws with a non-finite gradient are redrawn, as Stan's ``calc_grad``).
        redraw: redraw non-finite draws, up to ``10 * M`` (:data:`REDRAW_FACTOR`); False:
            none, ``ok`` is False where a draw is not finite, and the draws are evaluated
            without a loop (:func:`advi.fit` runs such steps while none fails, as a
            GPU evaluates a loop's condition on the host each time).
        eps: (M, K) standard normal draws to use (:mod:`advi.chunk` takes them from the
            host), or None: drawn from ``rng_key``. Redraws come from ``rng_key`` either way.

    Each draw gets its own minibatch key, so with minibatching the M draws see M
    independent minibatches (each scaled by N/B).
    """
    dim = params.mu.shape[-1]
    value_and_grad = _per_draw(log_density, with_elbo)

    def evaluate(eps: Array, keys: Array) -> tuple[Array, Array]:
        return value_and_grad(computed_once(family.transform(params, eps)), keys)

    draws = _finite_draws(
        evaluate, rng_key, (grad_samples, dim), REDRAW_FACTOR * grad_samples if redraw else 0,
        params.mu.dtype, grad_dim=dim, check_value=with_elbo, eps=eps,
    )
    _, pullback = jax.vjp(lambda p: family.transform(p, draws.eps), params)
    (grad_lp,) = pullback(draws.grad / grad_samples)
    entropy, grad_entropy = jax.value_and_grad(family.entropy)(params)
    grad = jax.tree.map(jnp.add, grad_lp, grad_entropy)
    elbo = jnp.mean(draws.value) + entropy if with_elbo else None
    return GradientEstimate(elbo, grad, ~jnp.any(draws.bad), draws.redraws)


def whitened_elbo_grad(
    log_density: Callable[[Array, Array], Array],
    params: FullRankParams,
    rng_key: Array,
    grad_samples: int,
    *,
    with_elbo: bool = True,
    redraw: bool = True,
    eps: Array | None = None,
) -> GradientEstimate:
    """The full-rank ELBO gradient in the coordinates whitened by q, "sticking the landing".

    With mu' = mu + L a and L' = L B (B lower triangular; :mod:`advi.whitening`), the
    gradient at a = 0, B = I from M draws zeta_m = mu + L eps_m is, with
    w_m = L^T grad log p(zeta_m) + eps_m,

        grad_a = (1/M) sum_m w_m,        grad_B = tril((1/M) sum_m w_m eps_m^T):

    the reparameterisation gradient with the score term of the entropy dropped (Roeder, Wu
    & Duvenaud 2017, "Sticking the landing"), whose expectation is the same, written so
    that no triangular solve is needed (-L^T grad log q(zeta_m) = eps_m exactly). Each w_m
    is zero when q equals the posterior, so on a Gaussian posterior the estimate's noise
    vanishes at the optimum, and it is accurate in float32 however ill-conditioned L is.

    Args:
        log_density: ``(zeta (K,), minibatch_key) -> ()``, the target log density in zeta.
        params: ``FullRankParams``, mu (K,), L (K, K) lower triangular.
        rng_key: PRNG key.
        grad_samples: M >= 1.
        with_elbo: as in :func:`elbo_grad`.
        redraw: as in :func:`elbo_grad`.
        eps: as in :func:`elbo_grad`.

    Returns:
        :class:`GradientEstimate` whose ``grad`` is ``FullRankParams(grad_a (K,),
        grad_B (K, K))``; non-finite draws are redrawn as in :func:`elbo_grad`.
    """
    dim = params.mu.shape[-1]
    L = jnp.tril(params.L)
    value_and_grad = _per_draw(log_density, with_elbo)

    def evaluate(eps: Array, keys: Array) -> tuple[Array, Array]:
        return value_and_grad(computed_once(params.mu + eps @ L.T), keys)

    draws = _finite_draws(
        evaluate, rng_key, (grad_samples, dim), REDRAW_FACTOR * grad_samples if redraw else 0,
        params.mu.dtype, grad_dim=dim, check_value=with_elbo, eps=eps,
    )
    w = draws.grad @ L + draws.eps
    grad = FullRankParams(jnp.mean(w, 0), jnp.tril(w.T @ draws.eps) / grad_samples)
    elbo = jnp.mean(draws.value) + FULLRANK.entropy(params) if with_elbo else None
    return GradientEstimate(elbo, grad, ~jnp.any(draws.bad), draws.redraws)


class ELBOEstimate(NamedTuple):
    """Output of :func:`elbo_estimate`.

    Attributes:
        elbo: () float, the estimate (nats); not to be used where ``ok`` is False.
        ok: () bool, False when non-finite draws exhausted the budget of ``elbo_samples``
            redraws.
        log_weights: (S,) float, log p(zeta_s) - log q(zeta_s) of the draws used, for the
            Pareto k-hat.
        redraws: () int32, draws replaced because their log density was not finite.
    """

    elbo: Array
    ok: Array
    log_weights: Array
    redraws: Array


class _Rows(NamedTuple):
    value: Array  # (S,) log density per draw
    half_sq: Array  # (S,) half the squared norm of each draw's eps
    tries: Array  # (S,) int32, the draw's redraws so far (part of its key)
    bad: Array  # (S,) bool, draw still non-finite
    redraws: Array  # () int32, redraws spent


def _elbo_by_rows(log_density: Callable[[Array, Array], Array], family: Family, params: Any,
                  rng_key: Array, elbo_samples: int, batch_size: int) -> ELBOEstimate:
    """:func:`elbo_estimate` drawn row by row, ``batch_size`` rows at a time: draw s after
    t redraws is made from ``fold_in(fold_in(rng_key, s), t)`` inside its batch, so the
    S x K draws never exist at once, and the estimate is the same whatever ``batch_size``.
    The log weights come from eps: log q(T(eps)) = -|eps|^2 / 2 + K / 2 - H[q]."""
    dim, dtype = params.mu.shape[-1], params.mu.dtype
    rows = jnp.arange(elbo_samples)

    def attempt(row_tries: tuple[Array, Array]) -> tuple[Array, Array]:
        key = jax.random.fold_in(jax.random.fold_in(rng_key, row_tries[0]), row_tries[1])
        eps_key, batch_key = jax.random.split(key)
        eps = standard_normal(eps_key, (dim,), dtype)
        value = log_density(computed_once(family.transform(params, eps)), batch_key)
        return value.astype(dtype), 0.5 * jnp.sum(eps * eps)

    def body(d: _Rows) -> _Rows:
        value, half_sq = jax.lax.map(attempt, (rows, d.tries), batch_size=batch_size)
        value, half_sq = jnp.where(d.bad, value, d.value), jnp.where(d.bad, half_sq, d.half_sq)
        bad = d.bad & ~jnp.isfinite(value)
        return _Rows(value, half_sq, d.tries + bad, bad,
                     d.redraws + jnp.sum(d.bad, dtype=jnp.int32))

    start = _Rows(jnp.zeros((elbo_samples,), dtype), jnp.zeros((elbo_samples,), dtype),
                  jnp.zeros((elbo_samples,), jnp.int32), jnp.ones((elbo_samples,), bool),
                  jnp.zeros((), jnp.int32))
    out = jax.lax.while_loop(
        lambda d: _within_budget(d.bad, d.redraws, elbo_samples, elbo_samples), body, start)
    entropy = family.entropy(params)
    return ELBOEstimate(jnp.mean(out.value) + entropy, ~jnp.any(out.bad),
                        out.value + out.half_sq - 0.5 * dim + entropy,
                        out.redraws - elbo_samples)


def elbo_estimate(
    log_density: Callable[[Array, Array], Array],
    family: Family,
    params: Any,
    rng_key: Array,
    elbo_samples: int,
    batch_size: int | None = None,
) -> ELBOEstimate:
    """The ELBO from ``elbo_samples`` draws (Stan's ``calc_ELBO``), for the convergence test.

    ``batch_size``: None evaluates all draws at once (``vmap``: with full data the draws
    share one pass over it, e.g. one matrix product); an integer evaluates them that many at
    a time (``jax.lax.map``), each draw made inside its batch from its own key, which is
    faster with minibatches, where each draw reads its own minibatch and vmap would hold S
    of them at once, S x B x D floats, and with large models, whose S x K draws and
    per-draw buffers would leave the cache (measurements: benchmarks/README.md,
    "Measurements behind the library's defaults"). Every ``batch_size`` gives the same
    estimate; all at once draws differently (one (S, K) array), an estimate of the same
    ELBO.

    Returns:
        :class:`ELBOEstimate`.
    """
    if batch_size is not None:
        return _elbo_by_rows(log_density, family, params, rng_key, elbo_samples, batch_size)
    dim = params.mu.shape[-1]

    def evaluate(eps: Array, keys: Array) -> tuple[Array, Array]:
        value = jax.vmap(log_density)(computed_once(family.transform(params, eps)), keys)
        return value, jnp.zeros(eps.shape[:1] + (0,), value.dtype)  # no gradient needed

    draws = _finite_draws(evaluate, rng_key, (elbo_samples, dim), elbo_samples, params.mu.dtype,
                          grad_dim=0)
    log_q = family.log_q(params, family.transform(params, draws.eps))
    elbo = jnp.mean(draws.value) + family.entropy(params)
    return ELBOEstimate(elbo, ~jnp.any(draws.bad), draws.value - log_q, draws.redraws)
