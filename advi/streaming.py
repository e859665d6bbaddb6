"""Data larger than memory: minibatch rows streamed from the host (paper Section 2.6).

``advi.fit(model, rng_key=key, minibatch_size=B, model_kwargs={"x": advi.stream(path)})``
reads the data plate's rows from a ``.npy`` file (or any NumPy array: a memory map, an
array in host memory) instead of holding all N of them on the device.

The sampling scheme: before every compiled call of the fit (a chunk of iterations, an ELBO
estimate; :class:`StreamedADVI`), the host draws P row indices uniformly *with replacement*
from range(N), reads those rows (in file order) and hands them to the device as the
model's arrays: a *pool* of P rows. Inside the call, the data plate draws each minibatch's
B indices uniformly with replacement from the pool (:mod:`advi.minibatch`), and its log
likelihood is scaled by N/B (NumPyro's P/B times the pool's N/P). Each minibatch is thus B
independent uniform rows of the N, as in memory, and the gradient and the ELBO estimates
are unbiased for the full data; minibatches of one call share its pool (as a shuffle
buffer does). P defaults to ``eval_elbo * B`` rows (the rows Stan's loop reads between two
ELBO estimates), at most N and at least B. A pool of all N rows in file order is the
in-memory target exactly (the tests check it). With ``block_rows=R`` the pool is P / R runs
of R consecutive rows (wrapping round at N), each run starting at a uniform random row:
every pool row is still uniform over the N, so the estimates stay unbiased, and a file
larger than memory is read in runs of R rows instead of a disk read per row (4x faster at
R = 16 even from the page cache: benchmarks/README.md); rows next to each other in the
file then tend to share minibatches, so shuffle a file whose order carries structure (rows
sorted by class or time) once before streaming it.

Prefetch: one worker thread of the standard library (:mod:`concurrent.futures`) reads the
next pool and copies it to the device (``jax.device_put``) while the device runs the
current one (:mod:`advi.feed`). Reading from a memory map maps the rows' pages into the
process; the reader drops them again every :data:`advi.feed.PIECE_ROWS` rows
(``madvise(MADV_DONTNEED)``), so that the process's resident memory holds a pool or two,
whatever N, and advises the kernel that reads are random (``MADV_RANDOM``: a file larger
than memory is read a row's pages at a time, not 128 KiB around each).

Several devices: ``advi.stream(path, devices=jax.devices())`` lays every minibatch's B
indices out over the devices (``jax.sharding.NamedSharding`` over a one-axis mesh
``"data"``) with the pool copied to each; XLA partitions the log likelihood by rows and
reduces it and its gradient across devices, which gives the one-device result up to float
rounding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .check_draws import CHECK_SALT
from .compiled import CompiledADVI, CompileSpec
from .feed import Feed
from .options import Options
from .target import CONCRETE_ERRORS, Target, from_numpyro

STREAM_SALT = 0x5743
"""Folded into the fit's key for the pools' NumPy generator."""


class Streamed(NamedTuple):
    """A model argument whose rows are streamed (:func:`stream`).

    Attributes:
        array: (N, ...) the rows: a NumPy array, often a memory map (``np.load(path,
            mmap_mode="r")``).
        pool_rows: P, rows per pool, or None (the default, module docstring).
        devices: the devices a minibatch is split over, or None (one: JAX's default).
        block_rows: R, consecutive rows read together (module docstring).
    """

    array: np.ndarray
    pool_rows: int | None = None
    devices: tuple[Any, ...] | None = None
    block_rows: int = 1


def stream(source: str | os.PathLike | np.ndarray, *, pool_rows: int | None = None,
           devices: Sequence[Any] | None = None, block_rows: int = 1) -> Streamed:
    """Mark a model argument as streamed: its rows (axis 0, the data plate's N) are read
    from the host a pool at a time (module docstring) instead of copied to the device.

    Args:
        source: a ``.npy`` file's path (memory-mapped, read-only) or a NumPy array of
            shape (N, ...) (a memory map or an array in host memory), numeric, N >= 1.
        pool_rows: P >= 1, rows per pool, or None (``eval_elbo * B``, at most N, at least
            B). Host and device memory hold two pools at a time.
        devices: devices to split every minibatch over (``jax.devices()``, several GPUs;
            or several CPU devices, JAX's ``jax_num_cpu_devices``); None or one device:
            no split.
        block_rows: R >= 1, a pool's rows come in runs of R consecutive rows (1: each
            row drawn on its own; 16: for a file larger than memory, module docstring).

    Returns:
        a :class:`Streamed` to pass among ``advi.fit``'s model arguments (with
        ``minibatch_size``); every streamed argument of a fit shares the row indices.

    Raises:
        ValueError: naming the source for a missing or unreadable file, an array with no
            rows or of a non-numeric dtype, and naming ``pool_rows``, ``devices`` or
            ``block_rows`` when they are not valid.
    """
    if isinstance(source, (str, os.PathLike)):
        try:
            array = np.load(source, mmap_mode="r")
        except (OSError, ValueError) as err:
            raise ValueError(f"advi.stream: cannot memory-map {os.fspath(source)!r} as a "
                             f".npy file: {err}") from err
    elif isinstance(source, np.ndarray):
        array = source
    else:
        raise ValueError(f"advi.stream takes a .npy path or a NumPy array, got "
                         f"{type(source).__name__}")
    if array.ndim < 1 or array.shape[0] < 1 or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"advi.stream needs an array of N >= 1 numeric rows, got shape "
                         f"{array.shape} and dtype {array.dtype}")
    for name, value in (("pool_rows", pool_rows), ("block_rows", block_rows)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name}={value!r} must be an integer >= 1"
                             + (" or None" if name == "pool_rows" else ""))
    if devices is not None and len(devices) < 1:
        raise ValueError(f"devices={devices!r} must name at least one device, or be None")
    return Streamed(array, None if pool_rows is None else int(pool_rows),
                    None if devices is None else tuple(devices), int(block_rows))


def _streamed(model_args: tuple, model_kwargs: dict[str, Any]) -> dict[str, Streamed]:
    """Name -> the streamed top-level arguments (``args[i]`` or the keyword)."""
    named = {f"args[{i}]": a for i, a in enumerate(model_args)}
    named.update({repr(k): v for k, v in model_kwargs.items()})
    return {name: a for name, a in named.items() if isinstance(a, Streamed)}


def is_streamed(model_args: tuple, model_kwargs: dict[str, Any] | None) -> bool:
    """Whether any top-level model argument is a :class:`Streamed`."""
    return bool(_streamed(model_args, dict(model_kwargs or {})))


def _settings(streamed: dict[str, Streamed], o: Options, model: Callable | Target
              ) -> tuple[int, int, tuple[Any, ...] | None, int]:
    """N, P, the devices and R of a streamed fit.

    Raises:
        ValueError: naming what is not supported or does not agree.
    """
    if not callable(model) or isinstance(model, Target):
        raise ValueError("streamed arguments (advi.stream) need a NumPyro model, not a Target")
    if o.minibatch_size is None:
        raise ValueError(f"streamed arguments {sorted(streamed)} need minibatch_size=B: "
                         "a streamed fit reads B rows per gradient")
    if o.start != "init":
        raise ValueError(f"start={o.start!r} is not supported with streamed arguments "
                         "(the Laplace start needs a fixed data set); use start='init' (a "
                         "preset's start gives way by itself)")
    sizes = {name: s.array.shape[0] for name, s in streamed.items()}
    pools = {s.pool_rows for s in streamed.values()}
    devices = {s.devices for s in streamed.values()}
    blocks = {s.block_rows for s in streamed.values()}
    if len({*sizes.values()}) > 1 or len(pools) > 1 or len(devices) > 1 or len(blocks) > 1:
        raise ValueError(f"streamed arguments must share N, pool_rows, devices and "
                         f"block_rows; got N {sizes}, pool_rows {sorted(map(str, pools))}, "
                         f"block_rows {sorted(blocks)}")
    num_rows, batch = next(iter(sizes.values())), o.minibatch_size
    pool = pools.pop() or max(batch, min(o.eval_elbo * batch, num_rows))
    if pool < batch:
        raise ValueError(f"pool_rows={pool} is smaller than minibatch_size={batch}")
    return num_rows, pool, devices.pop(), blocks.pop()


def _shardings(devices: tuple[Any, ...] | None) -> tuple[Any, Any]:
    """(where a pool goes, the minibatch indices' sharding): replicated and split over a
    one-axis mesh ``"data"`` of ``devices``; for one device, that device and None; for
    None, (None, None): JAX's default device."""
    if devices is None or len(devices) == 1:
        return (None if devices is None else devices[0]), None
    mesh = Mesh(np.array(devices), ("data",))
    return NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("data"))


class Stream(NamedTuple):
    """A streamed fit's feed and where its pools go in ``Target.data``.

    Attributes:
        feed: the :class:`Feed`.
        slots: argument name -> the index of its array in ``Target.data``.
    """

    feed: Feed
    slots: dict[str, int]

    def data(self, data: list) -> tuple:
        """``data`` (``Target.data`` as a list, which its caller holds no longer) with
        the next pool in the streamed slots; the last pool is dropped first, so that two
        pools are held at a time (this one and the one being read), not three."""
        for slot in self.slots.values():
            data[slot] = None
        pool = self.feed.next()
        for name, slot in self.slots.items():
            data[slot] = pool[name]
        return tuple(data)


def streamed_target(model: Callable | Target, model_args: tuple,
                    model_kwargs: dict[str, Any] | None, o: Options, rng_key: jax.Array
                    ) -> tuple[Target, Stream]:
    """The target of a NumPyro model with streamed arguments, built on a first pool, and
    the :class:`Stream` of the pools after it.

    Args:
        model, model_args, model_kwargs: as :func:`advi.fit`'s; top-level arguments may
            be :class:`Streamed`.
        o: the fit's options (``minibatch_size``, ``minibatch_plate``, ``eval_elbo``).
        rng_key: the fit's raw key; the pools' generator is seeded from it.

    Raises:
        ValueError: as :func:`_settings`, as :func:`advi.from_numpyro` for the first
            pool, and for a model that needs concrete values of its arrays (which a pool
            would replace).
    """
    kwargs = dict(model_kwargs or {})
    streamed = _streamed(model_args, kwargs)
    num_rows, pool_rows, devices, block_rows = _settings(streamed, o, model)
    assert not isinstance(model, Target)  # _settings refuses one
    pool_sharding, batch_sharding = _shardings(devices)
    seed = np.asarray(jax.random.fold_in(rng_key, STREAM_SALT)).tolist()
    feed = Feed({name: s.array for name, s in streamed.items()}, pool_rows, seed,
                pool_sharding, block_rows)
    first = feed.next()
    args = tuple(first.get(f"args[{i}]", a) for i, a in enumerate(model_args))
    kwargs = {k: first.get(repr(k), v) for k, v in kwargs.items()}
    try:
        target = from_numpyro(model, args, kwargs, minibatch_size=o.minibatch_size,
                              minibatch_plate=o.minibatch_plate, num_data=num_rows,
                              minibatch_sharding=batch_sharding)
    except CONCRETE_ERRORS as error:
        raise ValueError(CONCRETE_ROWS) from error
    assert target.numpyro is not None  # from_numpyro always records its model
    if not target.data:
        raise ValueError(CONCRETE_ROWS)
    where_args, where_kwargs = target.numpyro.rebuild(tuple(range(len(target.data))))
    slots = {f"args[{i}]": int(where_args[i]) for i in range(len(model_args))
             if f"args[{i}]" in streamed}
    slots.update({repr(k): int(where_kwargs[k]) for k in kwargs if repr(k) in streamed})
    return target, Stream(feed, slots)


CONCRETE_ROWS = (
    "a streamed model takes its arrays as traced arguments, a new pool of rows for every "
    "compiled call, but this one needs concrete values of them (int(x.sum()), np.mean(x), "
    "a Python if on a value): compute those outside the model and pass them as Python "
    "numbers")


class StreamedADVI(CompiledADVI):
    """:class:`advi.compiled.CompiledADVI` whose every chunk of iterations reads a new pool
    (:class:`Stream`). An ELBO estimate reads the pool of the chunk after it, ahead of
    that chunk: rows the iterates have not yet been fitted to, so the estimate is unbiased,
    and the host reads one pool per chunk, not two. A chunk run again (after non-finite
    draws) keeps its pool."""

    def __init__(self, target: Target, options: CompileSpec, optimizer: Any,
                 stream: Stream) -> None:
        super().__init__(target, options, optimizer)
        self.stream, self.unused = stream, False

    def _pool(self, keep: bool) -> None:
        """A new pool in ``target.data`` unless the current one is unused; ``keep``: it
        stays unused (for the next chunk)."""
        if not self.unused:
            data = list(self.target.data)
            self.target = self.target._replace(data=())
            self.target = self.target._replace(data=self.stream.data(data))
        self.unused = keep

    def run(self, state: Any, eta: float, key: jax.Array, salt: int, num_steps: int,
            trial: bool = False, narrowable: bool = False) -> Any:
        """:meth:`CompiledADVI.run` on the next pool."""
        self._pool(keep=False)
        return super().run(state, eta, key, salt, num_steps, trial, narrowable)

    def elbo(self, params: Any, key: jax.Array, salt: int, trial: bool = False
             ) -> tuple[float, np.ndarray]:
        """:meth:`CompiledADVI.elbo` on the next chunk's pool."""
        self._pool(keep=True)
        return super().elbo(params, key, salt, trial)

    def gradient_check(self, params: Any, rng_key: jax.Array, salt: int = CHECK_SALT) -> None:
        """None: a streamed fit has no end-of-fit gradient check (:mod:`advi.checks`), as
        one pool's rows, the same for every draw, would shift every pair's gradient alike
        (by about sqrt(N/P) posterior sds on a Gaussian posterior: P the pool's rows)."""
        return None

    def close(self) -> None:
        """Stop the feed's worker thread."""
        self.stream.feed.close()
