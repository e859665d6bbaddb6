"""The rows of the observed arrays that the ``"data"`` plate selects (paper Section 2.6)."""

from __future__ import annotations

import jax


def data_rows(idx: jax.Array, size: int, *arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The rows ``arrays[j][idx]`` a ``numpyro.plate("data", size)`` selects, gathered cheaply.

    When the plate is not subsampled (``idx`` has all ``size`` rows) the arrays are returned
    unchanged: a gather of every row costs about three matrix-vector products on the CPU,
    and the likelihood is a sum over rows, so the order of a full set of rows is immaterial.

    Args:
        idx: (B,) int, the plate's row indices (``with numpyro.plate(...) as idx``).
        size: N, the plate's full size.
        arrays: arrays with leading axis N.

    Returns:
        The arrays restricted to the B selected rows (leading axis B).
    """
    if idx.shape[0] == size:
        return arrays
    return tuple(a[idx] for a in arrays)
