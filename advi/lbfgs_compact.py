"""L-BFGS's direction in compact form: ``optax.scale_by_lbfgs`` in a few matrix products.

``optax.scale_by_lbfgs`` applies the inverse-Hessian approximation by the two-loop
recursion (Nocedal & Wright 2006, Algorithm 7.4): 2m dependent dot products and vector
updates per step, each a pass over a (K,) vector, run one after another in a loop. On a
GPU each is a kernel launch of its own, so that in the compiled Laplace start's search
(:func:`advi.lbfgs.mode_search`, m = 10) the recursion cost several times the model's
gradient on E3 and E4 (benchmarks/README.md, "The L-BFGS direction in compact form").

The same product in the compact representation of Byrd, Nocedal & Schnabel (1994,
"Representations of quasi-Newton matrices and their use in limited memory methods", Math.
Programming 63, Theorem 2.2), with H0 = gamma I:

    H g = gamma g + S a - gamma Y r,   r = R^-1 S^T g,
    a = R^-T ((D + gamma Y^T Y) r - gamma Y^T g)

where S and Y (K, m) hold the last m steps s_i and gradient changes y_i, R is the upper
triangle of S^T Y and D its diagonal. The pairs stay in one (2m, K) array, and its Gram
matrix is updated by one product per step, so a step makes two passes over the memory
(one product with [s, y, g], one with the coefficients) and the rest is (m, m) algebra.
Pairs not yet stored, and pairs with s^T y <= 0 (which a line search meeting the Wolfe
conditions never makes), are left out, as the two-loop recursion leaves out a pair whose
weight 1 / s^T y it sets to 0. gamma is optax's: s^T y / y^T y of the newest pair, and
min(1, 1 / ||g||) at the first step. Products are at full float32 precision
(``Precision.HIGHEST``: a GPU's default, TF32, would lose the pairs' curvature).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import Array
from jax.scipy.linalg import solve_triangular


class CompactLBFGSState(NamedTuple):
    """The memory of :func:`scale_by_compact_lbfgs`.

    Attributes:
        num_updates: () int32, updates made.
        params: (K,) the parameters at the last update.
        updates: (K,) the gradient at the last update.
        memory: (2m, K) rows 0..m-1 the steps s, rows m..2m-1 the gradient changes y; pair
            number n in row n mod m (and m + n mod m).
        gram: (2m, 2m) ``memory @ memory.T``.
    """

    num_updates: Array
    params: Array
    updates: Array
    memory: Array
    gram: Array


def scale_by_compact_lbfgs(memory_size: int = 10) -> optax.GradientTransformation:
    """``optax.scale_by_lbfgs(memory_size)`` (its default ``scale_init_precond``) for one
    (K,) array of parameters, computed in compact form (module docstring).

    ``update(g, state, params) -> (H g, state)``: g and params (K,) float, the same dtype;
    H g (K,) is the direction to subtract, as optax's.

    Raises:
        ValueError: for ``memory_size`` < 1.
    """
    if memory_size < 1:
        raise ValueError(f"memory_size must be >= 1, got {memory_size}")
    m = memory_size

    def init(params: Array) -> CompactLBFGSState:
        dtype = params.dtype
        return CompactLBFGSState(jnp.zeros((), jnp.int32), jnp.zeros_like(params),
                                 jnp.zeros_like(params), jnp.zeros((2 * m, params.size), dtype),
                                 jnp.zeros((2 * m, 2 * m), dtype))

    def update(updates: Array, state: CompactLBFGSState, params: Array
               ) -> tuple[Array, CompactLBFGSState]:
        first = state.num_updates == 0
        s = jnp.where(first, 0.0, params - state.params)
        y = jnp.where(first, 0.0, updates - state.updates)
        slot = (state.num_updates - 1) % m
        memory = state.memory.at[slot].set(s).at[m + slot].set(y)
        products = jnp.einsum("ik,jk->ij", memory, jnp.stack([s, y, updates]),
                              precision=jax.lax.Precision.HIGHEST)
        gram = state.gram.at[:, slot].set(products[:, 0]).at[slot].set(products[:, 0])
        gram = gram.at[:, m + slot].set(products[:, 1]).at[m + slot].set(products[:, 1])
        sy, yy = gram[slot, m + slot], gram[m + slot, m + slot]
        gamma = jnp.where(first, jnp.minimum(1.0, 1.0 / jnp.linalg.norm(updates)),
                          jnp.where(yy > 0, sy / jnp.where(yy > 0, yy, 1.0), 1.0))
        coef = _coefficients(gram, products[:, 2], (state.num_updates + jnp.arange(m)) % m, gamma)
        direction = gamma * updates + jnp.matmul(coef, memory,
                                                 precision=jax.lax.Precision.HIGHEST)
        return direction.astype(updates.dtype), CompactLBFGSState(
            state.num_updates + 1, params, updates, memory, gram)

    return optax.GradientTransformation(init, update)


def _coefficients(gram: Array, products: Array, order: Array, gamma: Array) -> Array:
    """(2m,) c with H g = gamma g + c @ memory: the compact form's (a, -gamma r) in the
    memory's rows, from the Gram matrix, ``memory @ g`` and the slots oldest first."""
    m = order.size
    sty = gram[:m, m:][order][:, order]
    yty = gram[m:, m:][order][:, order]
    diag = jnp.diagonal(sty)
    valid = diag > 0
    both = valid[:, None] & valid[None, :]
    r_matrix = jnp.where(both, jnp.triu(sty), 0.0) + jnp.diag(jnp.where(valid, 0.0, 1.0))
    p = jnp.where(valid, products[:m][order], 0.0)
    q = jnp.where(valid, products[m:][order], 0.0)
    r = solve_triangular(r_matrix, p, lower=False)
    yty_r = jnp.sum(jnp.where(both, yty, 0.0) * r, axis=1)  # elementwise: no TF32 on a GPU
    inner = jnp.where(valid, diag, 0.0) * r + gamma * (yty_r - q)
    a = solve_triangular(r_matrix.T, inner, lower=True)
    return jnp.zeros(2 * m, gram.dtype).at[order].set(a).at[m + order].set(-gamma * r)
