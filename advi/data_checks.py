"""Degenerate data, named while the target is built, before any compilation.

:func:`advi.from_numpyro` (and so :func:`advi.fit`) refuses a model whose unknowns ADVI
cannot fit (:func:`latent_sites`: a ``numpyro.param`` site, a discrete latent site, none at
all), and runs three checks on its data; each costs NumPy on the host or a trace of the
model into a jaxpr (nothing compiles):

* **An empty plate or an empty observed site** is a ``ValueError``: there is nothing to fit,
  and NumPyro's own failure (``AssertionError: size of plate should be positive``) names
  neither the plate nor the data. :func:`empty_plate_error` builds the message (the plate,
  its size, and the model's array arguments with an empty axis); :func:`observed_sites`
  refuses an observed site with no elements.
* **A single observation where a variance is estimated** is a ``RuntimeWarning``: when the
  scale of an observed site's distribution (``scale``, or ``scale_tril`` for a multivariate
  normal, of the distribution or of the one it wraps) depends on a latent site and that
  latent scale reaches exactly one observation in the whole model, and no more observed
  values than it has parameters (a multivariate observation holds several: a Gaussian
  process's three hyperparameters are estimated from one vector of eleven values; two
  independent scales from one vector of two are not), the data say almost nothing about
  it and its posterior is essentially its prior (with a flat prior it can be improper).
  With a proper prior the fit is still well defined, so this warns instead of refusing.
  "Depends on" means that moving the latent site changes the scale
  (:func:`check_single_observations`).
* **A constant column** of a 2-D floating-point argument with more than one row is a
  ``RuntimeWarning`` (:func:`check_constant_columns`) when the column is all zeros (its
  coefficient never reaches the likelihood) or when the argument has two or more constant
  columns (they are collinear). A single nonzero constant column is taken for an intercept,
  which many designs include on purpose, and passes silently. Whether the argument is a
  design matrix or an observed matrix cannot be told from its values, hence a warning.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import jax
import numpy as np
from numpyro.distributions import Unit
from numpyro.distributions.transforms import biject_to
from numpyro.handlers import seed, substitute, trace

SCALE_PARAMS: tuple[str, ...] = ("scale", "scale_tril")
PLATE_ASSERTION = "size of plate should be positive"


class ObservedSite(NamedTuple):
    """An observed sample site, from the model's trace: its value's shape, the number of
    observations (the value's batch elements, after plates) and the name of its scale
    parameter (one of :data:`SCALE_PARAMS`, or None when it has none)."""

    shape: tuple[int, ...]
    num_obs: int
    scale_param: str | None


def describe(path: tuple) -> str:
    """'x' for the keyword argument x, 'number 2' for the second positional argument, from a
    ``jax.tree_util`` key path into ``(model_args, model_kwargs)``."""
    where, first, *rest = path
    inner = jax.tree_util.keystr(tuple(rest))
    if where.idx == 0:
        return f"number {first.idx + 1}{inner}"
    return f"{first.key!r}{inner}"


def check_not_pandas(path: tuple, leaf: Any) -> None:
    """ValueError where a model argument (``leaf``, at the key ``path`` of
    :func:`describe`) is a pandas object (Series, DataFrame, Index, ...), naming it and what
    to pass instead: only arrays become the fit's data, and a pandas object left in the
    model meets JAX's traced values in its arithmetic, where it fails with a tracer error
    that names neither. pandas itself is not imported (its objects are told by their
    module)."""
    if (type(leaf).__module__ or "").split(".")[0] == "pandas":
        raise ValueError(
            f"model argument {describe(path)} is a pandas {type(leaf).__name__}; pass its "
            "values as an array (.to_numpy(), one per column of a DataFrame): only array "
            "arguments become the fit's data")


def named_arrays(model_args: tuple, model_kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """(description, array) of each array leaf of the model's arguments (:func:`describe`)."""
    paths_leaves = jax.tree_util.tree_flatten_with_path((tuple(model_args), dict(model_kwargs)))[0]
    return [(describe(path), leaf) for path, leaf in paths_leaves
            if isinstance(leaf, (jax.Array, np.ndarray))]


def empty_arrays(named_arrays: Iterable[tuple[str, Any]]) -> list[str]:
    """'argument name (shape (0, 3))' for each array with an empty axis."""
    return [f"argument {name} (shape {tuple(np.shape(a))})" for name, a in named_arrays
            if 0 in np.shape(a)]


def empty_plate_error(err: AssertionError, named_arrays: Iterable[tuple[str, Any]]
                      ) -> ValueError | None:
    """The ``ValueError`` that replaces NumPyro's assertion on a plate of size <= 0, or None
    when ``err`` is another assertion (to be re-raised as it is).

    ``named_arrays`` are (name, array) pairs of the model's array arguments; those with an
    empty axis are named (NumPyro's assertion names neither the plate nor the data).
    """
    if PLATE_ASSERTION not in str(err):
        return None
    empty = empty_arrays(named_arrays)
    where = (f"; the model's array arguments with an empty axis: {', '.join(empty)}"
             if empty else "")
    return ValueError(f"a numpyro.plate has size 0 (NumPyro: {PLATE_ASSERTION!r}): a plate "
                      f"needs at least one element{where}; ADVI needs at least one observation")


def _scale(fn: Any) -> tuple[str | None, Any]:
    """The first of :data:`SCALE_PARAMS` on ``fn`` or the distributions it wraps."""
    while fn is not None:
        for param in SCALE_PARAMS:
            if param in getattr(fn, "arg_constraints", {}) and hasattr(fn, param):
                return param, getattr(fn, param)
        fn = getattr(fn, "base_dist", None)
    return None, None


def unset_arguments(model: Callable, model_args: tuple, model_kwargs: dict[str, Any]
                    ) -> tuple[str, ...]:
    """The names of the model's parameters that are None in this call (given None, or left
    at a None default, as ``y=None`` is for prediction); () where the signature cannot be
    read or does not bind."""
    try:
        bound = inspect.signature(model).bind_partial(*model_args, **model_kwargs)
    except (TypeError, ValueError):
        return ()
    bound.apply_defaults()
    return tuple(name for name, value in bound.arguments.items() if value is None)


def latent_sites(model_trace: dict[str, Any], unset: tuple[str, ...] = ()) -> dict[str, Any]:
    """The model's latent sample sites (name -> trace site), in its order.

    Raises:
        ValueError: for a ``numpyro.param`` site, a discrete latent site (naming it, and the
            model's ``unset`` arguments, which may have been meant as its observations),
            and for a model with no latent site.
    """
    sites = {}
    for name, site in model_trace.items():
        if site["type"] == "param":
            raise ValueError(
                f"site {name!r} is a numpyro.param; ADVI needs every unknown as a "
                "numpyro.sample site with a prior"
            )
        if site["type"] == "sample" and not site["is_observed"]:
            if site["fn"].support.is_discrete:
                hint = "" if not unset else (
                    f"; the model's argument {unset[0]!r} is None: if it holds this site's "
                    "observations, pass them" if len(unset) == 1 else
                    f"; the model's arguments {', '.join(map(repr, unset))} are None: if one "
                    "holds this site's observations, pass it")
                raise ValueError(
                    f"latent site {name!r} is discrete ({type(site['fn']).__name__}); ADVI "
                    "needs continuous latent variables (sum discrete ones out, as the "
                    f"paper's GMM does){hint}"
                )
            sites[name] = site
    if not sites:
        raise ValueError("the model has no latent sample sites: nothing to infer")
    return sites


def observed_sites(model_trace: dict[str, Any]) -> dict[str, ObservedSite]:
    """The observed sample sites of a NumPyro trace (factors excluded).

    Raises:
        ValueError: naming an observed site whose value has no elements (shape with a 0).
    """
    found = {}
    for name, site in model_trace.items():
        if site["type"] != "sample" or not site["is_observed"] or isinstance(site["fn"], Unit):
            continue
        shape = tuple(np.shape(site["value"]))
        if 0 in shape:
            raise ValueError(f"observed site {name!r} has shape {shape}, with no elements: "
                             "ADVI needs at least one observation per observed site")
        batch = shape[:len(shape) - len(site["fn"].event_shape)]
        found[name] = ObservedSite(shape, math.prod(batch), _scale(site["fn"])[0])
    return found


def _scales(model: Callable, model_args: tuple, model_kwargs: dict[str, Any],
            values: dict[str, Any], sites: list[str]) -> list[np.ndarray]:
    """The scale parameter of each observed site in ``sites`` with the latent sites at
    ``values`` (constrained), from one un-jitted trace of the model."""
    conditioned = substitute(seed(model, 0), data=values)
    model_trace = trace(conditioned).get_trace(*model_args, **model_kwargs)
    return [np.asarray(_scale(model_trace[name]["fn"])[1]) for name in sites]


def _moved(model_trace: dict[str, Any], name: str) -> Any:
    """Latent site ``name``'s value moved by 0.5 in the unconstrained space (inside its
    support: ``biject_to``)."""
    to_support = biject_to(model_trace[name]["fn"].support)
    value = model_trace[name]["value"]
    return to_support(to_support.inv(value) + 0.5)


def check_single_observations(
    model: Callable, model_args: tuple, model_kwargs: dict[str, Any],
    latents: Mapping[str, tuple[int, ...]], observed: dict[str, ObservedSite],
) -> None:
    """Warn when a latent scale reaches a single observation in the whole model.

    Args:
        model, model_args, model_kwargs: the NumPyro model and its arguments.
        latents: latent site name -> its shape in the unconstrained space (its size is its
            number of parameters).
        observed: from :func:`observed_sites`.

    Warns:
        RuntimeWarning: naming the observed site, its shape and the latent sites its scale
            depends on, when those latent sites' scales reach one observation in all, of no
            more values (elements) than their parameters.

    A scale depends on a latent site when moving that site (by 0.5 in the unconstrained
    space, the others held) changes it: one un-jitted trace of the model per latent site,
    with NumPyro's ``seed``, ``substitute`` and ``trace`` handlers, run only when an
    observed site has one observation and a scale parameter.
    """
    scaled = [name for name, s in observed.items() if s.scale_param is not None]
    names = sorted(latents)
    if not any(observed[name].num_obs == 1 for name in scaled) or not names:
        return
    model_trace = trace(seed(model, 0)).get_trace(*model_args, **model_kwargs)
    values = {name: model_trace[name]["value"] for name in names}
    base = _scales(model, model_args, model_kwargs, values, scaled)
    depends: dict[str, list[str]] = {site: [] for site in scaled}
    for name in names:
        moved = _scales(model, model_args, model_kwargs,
                        {**values, name: _moved(model_trace, name)}, scaled)
        for site, before, after in zip(scaled, base, moved, strict=True):
            if np.shape(before) != np.shape(after) or not np.allclose(before, after):
                depends[site].append(name)
    reach = {name: [observed[s] for s in scaled if name in depends[s]] for name in names}
    for site in scaled:
        lonely = [name for name in depends[site]
                  if sum(s.num_obs for s in reach[name]) == 1
                  and sum(math.prod(s.shape) for s in reach[name]) <= math.prod(latents[name])]
        if lonely:
            warnings.warn(
                f"observed site {site!r} (shape {observed[site].shape}) is a single "
                f"observation whose {observed[site].scale_param} depends on the latent "
                f"site(s) {lonely}: a variance estimated from one observation is driven by "
                "its prior (improper under a flat prior); give the model more data or fix "
                "the scale", RuntimeWarning, stacklevel=3)


def check_constant_columns(named_arrays: Iterable[tuple[str, Any]]) -> None:
    """Warn about degenerate constant columns of 2-D floating-point arguments (N > 1 rows).

    Args:
        named_arrays: (name, array) pairs of the model's array arguments; only those with
            ``ndim == 2``, ``shape[0] > 1`` and a floating-point dtype are checked (NumPy).

    Warns:
        RuntimeWarning: naming the argument, its shape and the column indices, when a
            column is all zeros or two or more columns are constant (module docstring: a
            single nonzero constant column is an intercept and passes).
    """
    for name, array in named_arrays:
        if (np.ndim(array) != 2 or np.shape(array)[0] < 2
                or not np.issubdtype(array.dtype, np.floating)):
            continue
        a = np.asarray(array)
        constant = np.flatnonzero(np.all(a == a[:1], axis=0))
        zero = [int(j) for j in constant if a[0, j] == 0]
        if zero or len(constant) > 1:
            reasons = (["all-zero columns carry no information"] if zero else []) + (
                ["constant columns are collinear"] if len(constant) > 1 else [])
            values = ", ".join(f"{j}: {a[0, j]:g}" for j in constant)
            warnings.warn(
                f"model argument {name} (shape {a.shape}) has constant columns {{{values}}} "
                f"({'; '.join(reasons)}): their coefficients are informed by the prior only; "
                "drop them or keep a single intercept column", RuntimeWarning, stacklevel=3)
