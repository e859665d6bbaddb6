"""How the library's compiled loops read the model's data: narrow arrays as one call does.

Inside a ``jax.lax.while_loop`` XLA's loop-invariant code motion hoists the data-only part
of the body's work out of the loop and materialises it. That pays where the hoisted work
is costly and its result no wider than its inputs (a mixture's ``x * x``: the loop reads
one float matrix it would otherwise recompute). It costs where the result is wider than
the data: on a masked Poisson likelihood (the paper's E3 and E4) the boolean mask's
``where(mask, ...)`` parts of the gradient become float32 matrices made once and read on
every trip, so each trip reads three float32 (U, I) matrices where one call reads two and
the mask, and a gradient in a loop costs more than one call.

:func:`loop_data` puts the data in the loop's carry and its narrow leaves (fewer than 4
bytes an element: bool masks, 8- and 16-bit types) through ``jax.lax.optimization_barrier``
on every trip, its output carried on, so that XLA sees them change and hoists nothing
computed from them; wider leaves stay where XLA may hoist their work
(benchmarks/README.md, "`advi.loops.loop_data`").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

NARROW_BYTES = 4
"""Leaves with fewer bytes an element than this are read through the barrier (float32's
width: what hoisted work on them widens to)."""


def loop_data(data: Any, hold: bool = True
              ) -> tuple[list[Array], Callable[[list[Array]], tuple[Any, list[Array]]]]:
    """Split ``data`` for a loop: ``(held, read)``.

    Put ``held`` in the loop's carry; in the body, ``data, held = read(held)`` gives the
    data and the ``held`` to carry on (its narrow leaves the barrier's outputs: module
    docstring). Values, shapes and dtypes are unchanged; the barrier is the identity, and
    differentiable.

    Args:
        data: any pytree of arrays (the model's data, ``Target.data``).
        hold: False: nothing is held (``held`` is empty and ``read`` returns ``data``),
            for a loop whose body has a loop of its own around the log density: XLA
            hoists that loop's data-only work into the body, where the barrier would have
            it redone on every trip.

    Returns:
        ``held``: list, the data's leaves in ``jax.tree.leaves`` order (empty without
        ``hold`` or without a narrow leaf); ``read``: ``held -> (data, held)``.
    """
    leaves, tree = jax.tree.flatten(data)
    narrow = [i for i, leaf in enumerate(leaves)
              if jnp.dtype(jnp.result_type(leaf)).itemsize < NARROW_BYTES]

    hold = hold and bool(narrow)  # with nothing narrow, the loop is left as it was

    def read(held: list[Array]) -> tuple[Any, list[Array]]:
        if not hold:
            return data, held
        out = list(held)
        for i, leaf in zip(narrow, jax.lax.optimization_barrier([held[i] for i in narrow]),
                           strict=True):
            out[i] = leaf
        return jax.tree.unflatten(tree, out), out

    return (list(leaves) if hold else []), read
