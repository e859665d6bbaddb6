"""What ADVI is fitted to: a log density over zeta in R^K and the map back to theta.

A :class:`Target` is the single adapter between inference and a model.
:func:`from_numpyro` builds one from a NumPyro model: the transform T of paper Section 2.2 is
:func:`advi.transforms.unconstraining_transform` per latent site (NumPyro's ``biject_to``,
except where that is badly behaved), applied as NumPyro's ``potential_energy`` applies
``biject_to``, which gives log p(X, T^-1(zeta)) + log|det J_{T^-1}(zeta)| (paper Eq. 3).
:func:`from_log_density` wraps a plain JAX log density over R^K for users without NumPyro.
Minibatching (paper Section 2.6), the model's data plate subsampled: :mod:`advi.minibatch`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from jax import Array
from jax.flatten_util import ravel_pytree
from jax.sharding import Sharding
from numpyro.distributions.util import sum_rightmost
from numpyro.handlers import seed, substitute, trace
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.util import log_density as numpyro_log_density

from . import data_checks, minibatch
from .transforms import unconstraining_transform

logger = logging.getLogger("advi")


class NumPyroModel(NamedTuple):
    """The NumPyro model a :class:`Target` was built from (by :func:`from_numpyro`).

    Attributes:
        model: the model function.
        rebuild: ``(data) -> (args, kwargs)``: the model's arguments from ``Target.data``.
        shapes: latent site name -> the shape of its part of zeta, in the model's order.
        unravel: ``(zeta (K,)) -> {site: array of its shape in shapes}``: zeta's layout
            (``jax.flatten_util.ravel_pytree``'s, the sites sorted by name).
    """

    model: Callable
    rebuild: Callable[[Any], tuple[tuple, dict[str, Any]]]
    shapes: dict[str, tuple[int, ...]]
    unravel: Callable[[Array], dict[str, Array]]


class Target(NamedTuple):
    """A log density over the unconstrained space and its constraining map.

    The data are kept apart from the functions (``data``, a pytree of arrays) and passed to
    them as an argument, so that compiled code takes the data as an input instead of baking
    it in as a constant (XLA constant-folds large constants slowly and keeps copies); but
    see :func:`from_numpyro` for a model that needs concrete values of its arrays.

    Attributes:
        log_density_fn: ``(zeta, rng_key, data) -> ()``; zeta (K,) float; the key draws the
            minibatch (ignored without minibatching). Includes the log-Jacobian.
        constrain_fn: ``(zeta, data) -> dict``; site name -> constrained value (site shape).
        dim: K, the dimension of zeta.
        data: the arrays the functions read (a pytree; ``()`` when there are none).
        num_data: N, the size of the subsampled plate, or None without minibatching.
        full_log_density_fn: ``(zeta, data) -> ()`` on all the data, or None for minibatch
            targets.
        cache_key: a hashable identity of the functions (equal keys: the same functions of
            data of the same shapes), under which :func:`advi.fit` reuses compiled code
            across calls; None never reuses.
        numpyro: the model it was built from (:class:`NumPyroModel`), or None (a plain log
            density).
    """

    log_density_fn: Callable[[Array, Array, Any], Array]
    constrain_fn: Callable[[Array, Any], dict[str, Array]]
    dim: int
    data: Any = ()
    num_data: int | None = None
    full_log_density_fn: Callable[[Array, Any], Array] | None = None
    cache_key: Hashable | None = None
    numpyro: NumPyroModel | None = None

    def log_density(self, zeta: Array, rng_key: Array) -> Array:
        """log p(X, T^-1(zeta)) + log|det J_{T^-1}(zeta)| on this target's data, ()."""
        return self.log_density_fn(zeta, rng_key, self.data)

    def constrain(self, zeta: Array) -> dict[str, Array]:
        """T^-1(zeta) as a dict of constrained site values."""
        return self.constrain_fn(zeta, self.data)

    def full_log_density(self, zeta: Array) -> Array:
        """The log density on all the data (not a minibatch estimate).

        Raises:
            ValueError: for minibatch targets, which do not keep one.
        """
        if self.full_log_density_fn is None:
            raise ValueError("this target is minibatched: it has no full-data log density")
        return self.full_log_density_fn(zeta, self.data)


def from_log_density(log_density: Callable[[Array], Array], dim: int) -> Target:
    """Wrap a plain JAX log density over R^K (no constraints, no minibatching).

    Args:
        log_density: ``(zeta (K,)) -> ()``, differentiable with JAX.
        dim: K, a positive int.

    Draws from the fit are returned under the site name ``"zeta"``.

    Raises:
        ValueError: if ``dim`` is not a positive integer.
    """
    if not (isinstance(dim, int) and dim >= 1):
        raise ValueError(f"dim={dim!r} must be a positive integer")
    return Target(
        log_density_fn=lambda zeta, rng_key, data: log_density(zeta),
        constrain_fn=lambda zeta, data: {"zeta": zeta},
        dim=dim,
        full_log_density_fn=lambda zeta, data: log_density(zeta),
        cache_key=_hashable(("log_density", log_density, dim)),
    )


def _unconstrain_site(values: dict[str, Array], site: dict[str, Any]) -> Array | None:
    """``substitute_fn`` mapping a latent site's zeta to theta and adding its log-Jacobian
    as a factor (as NumPyro's ``potential_energy`` does, with our transforms)."""
    if site["type"] != "sample" or site["name"] not in values:
        return None
    fn = site["fn"]
    zeta = values[site["name"]]
    transform = unconstraining_transform(fn.support)
    theta = transform(zeta)
    log_det = transform.log_abs_det_jacobian(zeta, theta)
    log_det = sum_rightmost(log_det, jnp.ndim(log_det) - jnp.ndim(theta) + len(fn.event_shape))
    numpyro.factor(f"_{site['name']}_log_det", log_det)
    return theta


class _Probe(NamedTuple):
    shapes: dict[str, tuple[int, ...]]  # latent site -> zeta shape
    plates: dict[str, int]  # plate name -> size
    observed: dict[str, data_checks.ObservedSite]
    concrete: bool  # the model needs concrete values of its arrays (CONCRETE_ERRORS)


CONCRETE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError,
                   jax.errors.TracerArrayConversionError)
"""What JAX raises where a model needs the value of an array it is given as a traced argument
(``int(counts.sum())``, ``np.mean(y)``, a Python ``if`` on a data value)."""


def _probe(model: Callable, model_args: tuple, model_kwargs: dict[str, Any], data: tuple,
           rebuild: Callable) -> _Probe:
    """Trace the model abstractly (no compilation, no data touched) for its latent sites'
    unconstrained shapes, its plates' sizes and its observed sites, its arrays (``data``,
    put back in place by ``rebuild``) given as traced arguments, as the compiled log density
    takes them; where that raises one of :data:`CONCRETE_ERRORS`, again with the arguments as
    given, constants of the trace (``concrete`` True).

    Raises:
        ValueError: for an empty plate or an empty observed site (:mod:`advi.data_checks`).
    """
    found: dict[str, Any] = {}
    unset = data_checks.unset_arguments(model, model_args, model_kwargs)

    def run(args: tuple, kwargs: dict[str, Any]) -> None:
        traced = substitute(seed(model, 0), substitute_fn=init_to_uniform)
        model_trace = trace(traced).get_trace(*args, **kwargs)
        found["plates"] = {
            name: int(site["args"][0])
            for name, site in model_trace.items()
            if site["type"] == "plate"
        }
        latent = data_checks.latent_sites(model_trace, unset)
        found["shapes"] = {
            name: tuple(
                unconstraining_transform(s["fn"].support).inverse_shape(jnp.shape(s["value"]))
            )
            for name, s in latent.items()
        }
        found["observed"] = data_checks.observed_sites(model_trace)

    concrete = False
    try:
        try:
            jax.eval_shape(lambda arrays: run(*rebuild(arrays)), data)
        except CONCRETE_ERRORS:
            concrete = True
            jax.eval_shape(lambda: run(model_args, model_kwargs))
    except AssertionError as err:
        named = data_checks.named_arrays(model_args, model_kwargs)
        replaced = data_checks.empty_plate_error(err, named)
        if replaced is None:
            raise
        raise replaced from err
    return _Probe(found["shapes"], found["plates"], found["observed"], concrete)



def from_numpyro(
    model: Callable,
    model_args: tuple = (),
    model_kwargs: dict[str, Any] | None = None,
    *,
    minibatch_size: int | None = None,
    minibatch_plate: str | None = None,
    num_data: int | None = None,
    minibatch_sharding: Sharding | None = None,
) -> Target:
    """Build the ADVI target of a NumPyro model (paper Section 2.2, automatic transformation).

    The model's arrays become ``Target.data``, traced arguments of the compiled functions
    (one compilation serves every dataset of the same shapes). A model that needs concrete
    values of them (``int(counts.sum())``, ``np.mean(y)``, a Python ``if`` on a value: one of
    :data:`CONCRETE_ERRORS` in an abstract trace) gets them as given, constants of the
    compiled functions, as NumPyro's MCMC and SVI do: ``data`` is ``()``, ``cache_key`` None
    (each fit compiles anew), and it is logged at INFO.

    Args:
        model: a NumPyro model; every latent site continuous with a ``numpyro.sample`` prior.
        model_args, model_kwargs: the model's arguments (the data).
        minibatch_size: B, or None for the full data. With B, the data plate gets B indices
            per log-density evaluation (module docstring).
        minibatch_plate: the name of the model's data plate; None takes the model's only
            plate, or the one called "data" when it has several.
        num_data: N, where the model's arrays hold a pool of P of the plate's N rows
            (streamed data, :mod:`advi.streaming`): the plate is scaled by a further N/P,
            and ``Target.num_data`` is N; None: the arrays hold every row.
        minibatch_sharding: how the B indices (shape (B,)) are laid out over devices
            (:mod:`advi.minibatch`), e.g. ``NamedSharding(mesh, PartitionSpec("data"))``;
            None leaves it to XLA (one device).

    Raises:
        ValueError: for B < 1, B > N (naming both numbers), no plate to subsample, param
            sites, discrete latent sites (naming the site), array arguments with non-finite
            values (naming the argument and the count), pandas objects as arguments
            (naming the argument), a minibatched model that does not index its data by
            the data plate's indices (naming the plate, B and N), an empty plate (naming the plate
            and the empty arguments) or an empty observed site (naming it and its shape);
            all before any compilation.

    Warns:
        RuntimeWarning: for a latent scale estimated from a single observation, and for
            degenerate constant columns of a 2-D float argument (:mod:`advi.data_checks`).
    """
    model_kwargs = dict(model_kwargs or {})
    minibatch.check_minibatch_size(minibatch_size)
    data, rebuild, signature = _split_data(model_args, model_kwargs)
    data_checks.check_constant_columns(data_checks.named_arrays(model_args, model_kwargs))
    probe = _probe(model, model_args, model_kwargs, data, rebuild)
    if probe.concrete:
        logger.info("the model needs concrete values of its arrays: they are compiled in as "
                    "constants (each new dataset compiles anew)")
        data, rebuild = (), _constant((tuple(model_args), model_kwargs))
    data_checks.check_single_observations(model, model_args, model_kwargs, probe.shapes,
                                          probe.observed)
    plate = None
    if minibatch_size is not None:
        plate = minibatch.data_plate(probe.plates, minibatch_plate, int(minibatch_size))
    pool_scale = minibatch.pool_scale(num_data, plate, probe.plates)
    dim, unravel = _ravel(probe.shapes)
    seeded = minibatch.seeder(model, plate, minibatch_size, pool_scale, minibatch_sharding)

    def conditioned(fn: Callable, zeta: Array) -> Callable:
        values = unravel(zeta)
        return substitute(fn, substitute_fn=lambda site: _unconstrain_site(values, site))

    def log_joint(fn: Callable, zeta: Array, data: Any) -> Array:
        args, kwargs = rebuild(data)
        return numpyro_log_density(conditioned(fn, zeta), args, kwargs, {})[0]

    def constrain(zeta: Array, data: Any) -> dict[str, Array]:
        args, kwargs = rebuild(data)
        model_trace = trace(conditioned(seeded(None), zeta)).get_trace(*args, **kwargs)
        return {name: model_trace[name]["value"] for name in probe.shapes}

    if plate is not None and minibatch_size is not None:  # abstract, nothing compiled
        minibatch.check_indexed(lambda: jax.eval_shape(
            lambda d: log_joint(seeded(None), jnp.zeros(dim), d), data), plate,
            int(minibatch_size), probe.plates[plate])
    return Target(
        log_density_fn=lambda zeta, rng_key, data: log_joint(seeded(rng_key), zeta, data),
        constrain_fn=constrain,
        dim=dim,
        data=data,
        num_data=None if plate is None else num_data or probe.plates[plate],
        full_log_density_fn=(
            None if plate is not None else lambda zeta, data: log_joint(seed(model, 0), zeta, data)
        ),
        cache_key=None if probe.concrete else _hashable((
            "numpyro", model, signature, minibatch_size, plate, pool_scale, minibatch_sharding)),
        numpyro=NumPyroModel(model, rebuild, probe.shapes, unravel),
    )


def fit_dtype(dtype: Any) -> np.dtype:
    """The dtype a model's array of ``dtype`` takes on the device (:func:`device_array`): a
    float promoted to at least the fit's (``jnp.result_type(float)`` in the calling thread,
    whose ``jax.enable_x64`` a float64 fit sets), any other kept."""
    if jnp.issubdtype(dtype, jnp.floating):
        return np.dtype(jnp.promote_types(dtype, jnp.result_type(float)))
    return np.dtype(dtype)


def device_array(leaf: jax.Array | np.ndarray) -> jax.Array:
    """A model's array on the device, a floating one at least as wide as the fit's float
    (``jnp.result_type(float)``): in a float64 fit (``dtype="float64"``, or ``"auto"``
    promoted) float32 data become float64 (exactly), so that arithmetic on the data alone
    runs in float64 too (a kernel's squared distances of float32 inputs, whose rounding
    left a Gaussian process's covariance with a 1e-6 jitter not positive definite, where
    float64 factors it). Else the dtype is kept, and given: a weakly typed array
    (``jnp.full(7, 2.0)``) becomes strongly typed, so that equal shapes and dtypes always
    hit the same compiled code; a NumPy array is copied to the device as it is
    (``jnp.asarray`` would compile a small program per shape)."""
    dtype = fit_dtype(leaf.dtype)
    if isinstance(leaf, np.ndarray):
        return jax.device_put(leaf.astype(dtype, copy=False))
    return jnp.asarray(leaf, dtype=dtype)


def _ravel(shapes: dict[str, tuple[int, ...]]) -> tuple[int, Callable[[Array], dict]]:
    """K and ``unravel(zeta (K,)) -> {site: array}`` of ``jax.flatten_util.ravel_pytree``
    for the sites' shapes, found in ``jax.eval_shape``: no XLA op runs (eagerly, each would
    be compiled, a cost a fresh process notices), and ``unravel`` holds only the static
    sizes."""
    found = {}

    def ravel() -> Array:
        flat, found["unravel"] = ravel_pytree({name: jnp.zeros(shape)
                                               for name, shape in shapes.items()})
        return flat

    return int(jax.eval_shape(ravel).shape[0]), found["unravel"]


def _constant(arguments: tuple[tuple, dict[str, Any]]) -> Callable:
    """``rebuild`` for a model whose arrays are constants: ``(()) -> arguments``."""
    return lambda _: arguments


def _hashable(key: tuple) -> Hashable | None:
    """``key`` if it can be hashed (a model argument may not be), else None."""
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _split_data(
    model_args: tuple, model_kwargs: dict[str, Any]
) -> tuple[tuple, Callable, tuple]:
    """Separate the array arguments of a model (the data, moved to the device once) from
    the rest (sizes, hyperparameters, flags), which stay Python values.

    Returns:
        (data, rebuild, signature): the arrays as a tuple; ``rebuild(data) -> (args,
        kwargs)``; and a description of the arguments that equal for calls whose arrays
        have the same shapes and dtypes and whose other arguments are equal.

    Raises:
        ValueError: when a floating-point array holds NaN or inf, naming the argument (its
            position or keyword) and the count; for a pandas object, naming the argument.
    """
    paths_leaves, treedef = jax.tree_util.tree_flatten_with_path(
        (tuple(model_args), dict(model_kwargs))
    )
    leaves = [leaf for _, leaf in paths_leaves]
    is_array = [isinstance(leaf, (jax.Array, np.ndarray)) for leaf in leaves]
    for (path, leaf), array in zip(paths_leaves, is_array, strict=True):
        data_checks.check_not_pandas(path, leaf)
        if array and jnp.issubdtype(leaf.dtype, jnp.inexact):
            bad = int(np.size(leaf) - np.count_nonzero(np.isfinite(np.asarray(leaf))))
            if bad:
                raise ValueError(
                    f"model argument {data_checks.describe(path)} (shape {tuple(leaf.shape)}) "
                    f"holds {bad} "
                    "non-finite values (NaN or inf); ADVI needs finite data: drop or impute "
                    "them, or set them to any finite value and pass a mask the model "
                    "applies (the observed site's obs_mask, or numpyro.handlers.mask)"
                )
    data = tuple(device_array(leaf) for leaf, a in zip(leaves, is_array, strict=True) if a)
    signature = (treedef, tuple(
        (leaf.shape, str(leaf.dtype)) if a else (type(leaf), leaf)
        for leaf, a in zip(leaves, is_array, strict=True)
    ))

    # the arrays' places hold None: rebuild (kept with compiled code) holds none of the data
    skeleton = [None if a else leaf for leaf, a in zip(leaves, is_array, strict=True)]

    def rebuild(data: tuple) -> tuple[tuple, dict[str, Any]]:
        arrays = iter(data)
        merged = [next(arrays) if a else leaf for leaf, a in zip(skeleton, is_array, strict=True)]
        return jax.tree.unflatten(treedef, merged)

    return data, rebuild, signature
