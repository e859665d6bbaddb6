"""Pools of rows read from the host for a streamed fit (:mod:`advi.streaming`): each pool
read from a memory map a piece at a time, its pages dropped after each piece, into a
buffer aligned for ``jax.device_put``, and copied to the device by a worker thread while
the previous pool is used."""

from __future__ import annotations

import concurrent.futures
import mmap
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from .target import fit_dtype

PIECE_ROWS = 256
"""Rows read from a memory map between two ``madvise(MADV_DONTNEED)`` calls: the pages the
reader maps stay below this many rows' (times the kernel's fault-around, up to 16 pages
a row: 16 MiB)."""


def _mapping(array: np.ndarray) -> mmap.mmap | None:
    """The memory map under ``array`` (its ``base`` chain), or None."""
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, mmap.mmap) else None


ALIGNMENT = 4096
"""Bytes a pool's buffer is aligned to: on a CPU, ``jax.device_put`` then takes the buffer
as it is instead of copying it (a pool is never written after it is read)."""


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start at a multiple of
    :data:`ALIGNMENT` bytes."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start:start + size].view(dtype).reshape(shape)


def read_rows(array: np.ndarray, rows: np.ndarray, name: str, dtype: Any = None
              ) -> np.ndarray:
    """``array[rows]`` as a new C-ordered array of ``dtype`` (None: the array's), read
    :data:`PIECE_ROWS` rows at a time from a memory map, whose pages are dropped after
    each piece.

    Args:
        array: (N, ...) numeric rows.
        rows: (P,) int64 sorted row indices in [0, N).
        name: the argument's name, for errors.
        dtype: the pool's dtype (a float64 fit's float32 rows, widened exactly).

    Raises:
        ValueError: naming the argument and the first row that holds NaN or inf.
    """
    out = _aligned_empty((rows.shape[0], *array.shape[1:]), dtype or array.dtype)
    mapped = _mapping(array)
    drop = getattr(mmap, "MADV_DONTNEED", None)
    if mapped is not None and hasattr(mmap, "MADV_RANDOM"):
        mapped.madvise(mmap.MADV_RANDOM)  # no read-around: a row costs a page or two of I/O
    for start in range(0, rows.shape[0], PIECE_ROWS):
        piece = rows[start:start + PIECE_ROWS]
        if out.dtype == array.dtype:
            np.take(array, piece, axis=0, out=out[start:start + PIECE_ROWS])
        else:
            out[start:start + PIECE_ROWS] = np.take(array, piece, axis=0)
        if mapped is not None and drop is not None:
            mapped.madvise(drop)
    if np.issubdtype(out.dtype, np.inexact):
        finite = np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1)
        if not finite.all():
            row = int(rows[np.argmin(finite)])
            raise ValueError(f"streamed model argument {name} holds NaN or inf in row {row}; "
                             "ADVI needs finite data: drop or impute such rows")
    return out


class Feed:
    """Pools of the streamed arguments' rows, each read and copied to the device in a
    worker thread while the previous one is used (module docstring).

    Args:
        arrays: argument name -> (N, ...) rows, all with the same N.
        pool_rows: P, rows per pool.
        seed: seeds the NumPy generator of the pools' row indices.
        block_rows: R, the pool's rows come in runs of R consecutive rows.
        sharding: where a pool goes (``jax.device_put``'s target), or None (the default
            device).

    Each argument's pools take :func:`advi.target.fit_dtype` of its rows' dtype, as the
    first pool the target was built on did (a float64 fit's float32 rows become float64).
    ``jax.enable_x64`` is local to a thread, so the worker thread copies its pools under
    the x64 mode of the thread that made the feed (else ``jax.device_put`` would narrow
    them to float32 again).
    """

    def __init__(self, arrays: dict[str, np.ndarray], pool_rows: int, seed: Sequence[int],
                 sharding: Any = None, block_rows: int = 1) -> None:
        self.arrays, self.pool_rows, self.sharding = arrays, pool_rows, sharding
        self.dtypes = {name: fit_dtype(array.dtype) for name, array in arrays.items()}
        self.x64 = fit_dtype(np.float32) == np.float64
        self.block_rows = block_rows
        self.num_rows = next(iter(arrays.values())).shape[0]
        self.rng = np.random.default_rng(list(seed))
        self.executor = concurrent.futures.ThreadPoolExecutor(1, "advi-stream")
        self.pending = self.executor.submit(self._pool)

    def _pool(self) -> dict[str, jax.Array]:
        runs = self.rng.integers(0, self.num_rows, -(-self.pool_rows // self.block_rows))
        rows = (runs[:, None] + np.arange(self.block_rows)) % self.num_rows
        rows = np.sort(rows.ravel()[:self.pool_rows])
        with jax.enable_x64(self.x64):
            return {name: jax.device_put(read_rows(array, rows, name, self.dtypes[name]),
                                         self.sharding) for name, array in self.arrays.items()}

    def next(self) -> dict[str, jax.Array]:
        """The next pool, argument name -> (P, ...) device array; starts reading the one
        after it.

        Raises:
            whatever reading raised (e.g. :func:`read_rows`' ValueError).
        """
        pool = self.pending.result()
        self.pending = self.executor.submit(self._pool)
        return pool

    def close(self) -> None:
        """Stop the worker thread (the pool being read is discarded)."""
        self.pending.cancel()
        self.executor.shutdown(wait=True, cancel_futures=True)
