"""What ADVI is fitted to: a log density over zeta in R^K and the map back to theta.

A :class:`Target` is the single adapter between inference and a model (STYLE.md rule 4).
:func:`from_numpyro` builds one from a NumPyro model: the transform T of paper Section 2.2 is
NumPyro's ``biject_to(site support)`` per latent site, and ``potential_energy`` gives
log p(X, T^-1(zeta)) + log|det J_{T^-1}(zeta)| (paper Eq. 3). :func:`from_log_density`
wraps a plain JAX log density over R^K for users without NumPyro.

Minibatching (paper Section 2.6): the model declares its observation axis with
``numpyro.plate(minibatch_plate, N)`` and indexes its data with the plate's indices. With
``minibatch_size=B`` the plate is handed B indices drawn uniformly *with replacement* (O(B)
work per draw, unbiased for the full-data likelihood; NumPyro's own without-replacement
subsample costs O(N) per draw), and NumPyro scales the plate's log likelihood by N/B.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.flatten_util import ravel_pytree
from numpyro.distributions.transforms import biject_to
from numpyro.handlers import seed, substitute, trace
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.util import constrain_fn, potential_energy
from numpyro.primitives import Messenger


class Target(NamedTuple):
    """A log density over the unconstrained space and its constraining map.

    The data are kept apart from the functions (``data``, a pytree of arrays) and passed to
    them as an argument, so that compiled code takes the data as an input instead of baking
    it in as a constant (XLA constant-folds large constants slowly and keeps copies).

    Attributes:
        log_density_fn: ``(zeta, rng_key, data) -> ()``; zeta (K,) float; the key draws the
            minibatch (ignored without minibatching). Includes the log-Jacobian.
        constrain_fn: ``(zeta, data) -> dict``; site name -> constrained value (site shape).
        dim: K, the dimension of zeta.
        data: the arrays the functions read (a pytree; ``()`` when there are none).
        num_data: N, the size of the subsampled plate, or None without minibatching.
        full_log_density_fn: ``(zeta, data) -> ()`` on all the data, or None for minibatch
            targets.
    """

    log_density_fn: Callable[[Array, Array, Any], Array]
    constrain_fn: Callable[[Array, Any], dict[str, Array]]
    dim: int
    data: Any = ()
    num_data: int | None = None
    full_log_density_fn: Callable[[Array, Any], Array] | None = None

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
    )


class _subsample_plate(Messenger):
    """Hand the plate called ``name`` B indices drawn with replacement from range(N)."""

    def __init__(self, fn: Callable, name: str, size: int, rng_key: Array | None) -> None:
        self.name, self.size, self.rng_key = name, size, rng_key
        self.found: list[int] = []
        super().__init__(fn)

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] != "plate" or msg["name"] != self.name:
            return
        num_data = int(msg["args"][0])
        self.found.append(num_data)
        if self.size > num_data:
            raise ValueError(
                f"minibatch_size={self.size} is larger than the number of data points "
                f"N={num_data} in plate {self.name!r}; use 1 <= minibatch_size <= {num_data}"
            )
        key = self.rng_key if self.rng_key is not None else jax.random.PRNGKey(0)
        msg["args"] = (num_data, self.size)
        msg["value"] = jax.random.randint(key, (self.size,), 0, num_data)


def _latent_sites(model_trace: dict[str, Any]) -> dict[str, Any]:
    sites = {}
    for name, site in model_trace.items():
        if site["type"] == "param":
            raise ValueError(
                f"site {name!r} is a numpyro.param; ADVI needs every unknown as a "
                "numpyro.sample site with a prior"
            )
        if site["type"] == "sample" and not site["is_observed"]:
            if site["fn"].support.is_discrete:
                raise ValueError(
                    f"latent site {name!r} is discrete; ADVI needs continuous latent "
                    "variables (sum discrete ones out, as the paper's GMM does)"
                )
            sites[name] = site
    if not sites:
        raise ValueError("the model has no latent sample sites: nothing to infer")
    return sites


def _probe(
    model: Callable,
    model_args: tuple,
    model_kwargs: dict[str, Any],
    minibatch_size: int | None,
    minibatch_plate: str,
) -> tuple[int | None, dict[str, Array]]:
    """Trace the model abstractly (no compilation, no data touched) for its latent sites'
    unconstrained shapes and, with minibatching, the plate size N."""
    found: dict[str, Any] = {}

    def run() -> None:
        probe = _subsample_plate(model, minibatch_plate, minibatch_size or 1, None)
        seeded = seed(probe if minibatch_size else model, 0)
        traced = substitute(seeded, substitute_fn=init_to_uniform)
        model_trace = trace(traced).get_trace(*model_args, **model_kwargs)
        found["plates"] = probe.found
        found["shapes"] = {
            name: biject_to(s["fn"].support).inverse_shape(jnp.shape(s["value"]))
            for name, s in _latent_sites(model_trace).items()
        }

    jax.eval_shape(run)
    if minibatch_size is not None and not found["plates"]:
        raise ValueError(
            f"minibatch_size={minibatch_size} was given but the model has no plate named "
            f"{minibatch_plate!r}; declare the observation axis with "
            f"numpyro.plate({minibatch_plate!r}, N) or pass minibatch_plate=..."
        )
    num_data = found["plates"][0] if minibatch_size is not None else None
    return num_data, {name: jnp.zeros(shape) for name, shape in found["shapes"].items()}


def from_numpyro(
    model: Callable,
    model_args: tuple = (),
    model_kwargs: dict[str, Any] | None = None,
    *,
    minibatch_size: int | None = None,
    minibatch_plate: str = "data",
) -> Target:
    """Build the ADVI target of a NumPyro model (paper Section 2.2, automatic transformation).

    Args:
        model: a NumPyro model; every latent site continuous with a ``numpyro.sample`` prior.
        model_args, model_kwargs: the model's arguments (the data).
        minibatch_size: B, or None for the full data. With B, the plate called
            ``minibatch_plate`` gets B indices per log-density evaluation (module docstring).
        minibatch_plate: the name of the model's observation plate.

    Raises:
        ValueError: for B < 1, B > N (naming both numbers), a model without a plate of that
            name when B is given, param sites or discrete latent sites.
    """
    model_kwargs = dict(model_kwargs or {})
    if minibatch_size is not None:
        if isinstance(minibatch_size, bool) or not isinstance(minibatch_size, int):
            raise ValueError(f"minibatch_size={minibatch_size!r} must be an integer >= 1 or None")
        if minibatch_size < 1:
            raise ValueError(f"minibatch_size={minibatch_size} must be >= 1")

    def wrapped(rng_key: Array | None) -> Callable:
        if minibatch_size is None:
            return seed(model, jax.random.PRNGKey(0) if rng_key is None else rng_key)
        return seed(
            _subsample_plate(model, minibatch_plate, minibatch_size, rng_key),
            jax.random.PRNGKey(0) if rng_key is None else rng_key,
        )

    num_data, template = _probe(model, model_args, model_kwargs, minibatch_size, minibatch_plate)
    flat, unravel = ravel_pytree(template)
    data, rebuild = _split_data(model_args, model_kwargs)

    def log_density(zeta: Array, rng_key: Array, data: Any) -> Array:
        args, kwargs = rebuild(data)
        return -potential_energy(wrapped(rng_key), args, kwargs, unravel(zeta))

    def full_log_density(zeta: Array, data: Any) -> Array:
        args, kwargs = rebuild(data)
        return -potential_energy(seed(model, 0), args, kwargs, unravel(zeta))

    def constrain(zeta: Array, data: Any) -> dict[str, Array]:
        args, kwargs = rebuild(data)
        values = constrain_fn(wrapped(None), args, kwargs, unravel(zeta))
        return {name: values[name] for name in template}

    return Target(
        log_density_fn=log_density,
        constrain_fn=constrain,
        dim=int(flat.shape[0]),
        data=data,
        num_data=num_data,
        full_log_density_fn=None if minibatch_size is not None else full_log_density,
    )


def _split_data(model_args: tuple, model_kwargs: dict[str, Any]) -> tuple[tuple, Callable]:
    """Separate the array arguments of a model (the data, moved to the device once) from
    the rest (sizes, hyperparameters, flags), which stay Python values.

    Returns:
        (data, rebuild): the arrays as a tuple, and ``rebuild(data) -> (args, kwargs)``.
    """
    leaves, treedef = jax.tree.flatten((tuple(model_args), dict(model_kwargs)))
    is_array = [isinstance(leaf, (jax.Array, np.ndarray)) for leaf in leaves]
    data = tuple(jnp.asarray(leaf) for leaf, a in zip(leaves, is_array, strict=True) if a)

    def rebuild(data: tuple) -> tuple[tuple, dict[str, Any]]:
        arrays = iter(data)
        merged = [next(arrays) if a else leaf for leaf, a in zip(leaves, is_array, strict=True)]
        return jax.tree.unflatten(treedef, merged)

    return data, rebuild
