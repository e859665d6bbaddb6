"""A fit in the ecosystem's terms: ArviZ data and a NumPyro guide.

:func:`to_inference_data` turns an :class:`advi.ADVIResult` into the data object of the
installed ArviZ (``arviz.InferenceData`` in ArviZ 0.x, an ``xarray.DataTree`` in 1.x), as
PyMC's ``approx.sample()`` does. :func:`numpyro_guide` gives q as a NumPyro autoguide and its
parameters, for ``numpyro.infer.Predictive`` (the posterior predictive) or more SVI steps.

q lives in zeta-space, laid out by :attr:`advi.target.NumPyroModel.unravel` (sites sorted by
name), while NumPyro's ``AutoContinuous`` guides flatten the sites in their own order (the
model's, in NumPyro 0.22). The guide's layout is read from the guide itself, never assumed:
a mapping by position put a ``HalfNormal`` scale's median at 10.1 instead of 2.88.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from numpyro.distributions.transforms import biject_to
from numpyro.handlers import seed, substitute, trace
from numpyro.infer import Predictive
from numpyro.infer.autoguide import AutoContinuous, AutoDiagonalNormal, AutoMultivariateNormal

from . import __version__
from .precision import scope_of
from .target import NumPyroModel, Target
from .transforms import unconstraining_transform

if TYPE_CHECKING:
    from .result import ADVIResult


def model_of(target: Target) -> tuple[NumPyroModel, tuple, dict[str, Any]]:
    """The NumPyro model behind ``target`` and its arguments (on the target's data).

    Raises:
        ValueError: for a target of a plain log density (:func:`advi.from_log_density`).
    """
    if target.numpyro is None:
        raise ValueError("the fit's target is a plain log density (advi.from_log_density), "
                         "not a NumPyro model: there is no model to run")
    args, kwargs = target.numpyro.rebuild(target.data)
    return target.numpyro, args, kwargs


def model_trace(target: Target, values: dict[str, Array]) -> dict[str, Any]:
    """NumPyro's trace of the target's model with its latent sites set to ``values`` (one
    constrained value per site; never drawn from the prior, which may be improper)."""
    source, args, kwargs = model_of(target)
    return trace(substitute(seed(source.model, 0), data=values)).get_trace(*args, **kwargs)


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r} must be an integer >= 1")


def to_inference_data(result: ADVIResult, num_samples: int = 1000, *, rng_key: Array,
                      num_chains: int = 1) -> Any:
    """The fit as ArviZ data: draws from q, the model's deterministic sites, diagnostics.

    Args:
        result: an :class:`advi.ADVIResult`.
        num_samples: draws per chain (ArviZ's ``draw`` dimension).
        rng_key: a JAX PRNG key; the draws are ``result.sample(rng_key, num_chains *
            num_samples)`` reshaped to (chain, draw, ...), chain-major.
        num_chains: the ``chain`` dimension; the draws are independent, so chains only
            let ArviZ's R-hat and ESS split them (4 is ArviZ's minimum for R-hat).

    Returns:
        ``arviz.from_dict``'s object (``InferenceData`` in ArviZ 0.x, ``xarray.DataTree`` in
        1.x) with groups ``posterior`` (every latent site in constrained space, dims
        (chain, draw, *site shape), and each ``numpyro.deterministic`` site of a NumPyro
        model, computed by ``numpyro.infer.Predictive`` on the draws) and ``elbo_history``
        (one row per ELBO evaluation, dim ``evaluation``: the columns of
        :class:`advi.ELBOHistory`, nats and seconds). The posterior's attributes hold the
        diagnostics: family, converged, convergence_reason, num_iterations, pareto_khat
        (nan when none was drawn), eta, start, wall_s (seconds) and the library's
        version.

    Raises:
        ValueError: for num_samples or num_chains not a positive integer.

    ArviZ (and xarray, its data model) are imported here, not with the library (~1 s).
    """
    import arviz as az
    import xarray as xr

    _check_count("num_samples", num_samples)
    _check_count("num_chains", num_chains)
    with scope_of(result.params):
        flat = result.sample(rng_key, num_chains * num_samples)
        flat.update(_deterministic(result.approximation.target, flat, rng_key))
        attrs = diagnostics(result)
    posterior = {name: np.asarray(value).reshape(num_chains, num_samples, *value.shape[1:])
                 for name, value in flat.items()}
    history = _history_dataset(result.elbo_history)
    if int(az.__version__.split(".")[0]) >= 1:  # from_dict takes a dict of groups
        data = az.from_dict({"posterior": posterior})
        data["elbo_history"] = xr.DataTree(history)
        data["posterior"].attrs.update(attrs)
    else:
        data = az.from_dict(posterior=posterior)
        data.add_groups({"elbo_history": history})
        data.posterior.attrs.update(attrs)
    return data


def _deterministic(target: Target, draws: dict[str, Array], rng_key: Array
                   ) -> dict[str, Array]:
    """The model's ``numpyro.deterministic`` sites at the draws (empty for a log density)."""
    if target.numpyro is None:
        return {}
    source, args, kwargs = model_of(target)
    sites = model_trace(target, {name: value[0] for name, value in draws.items()})
    names = [name for name, site in sites.items() if site["type"] == "deterministic"]
    if not names:
        return {}
    predictive = Predictive(source.model, posterior_samples=draws, return_sites=names)
    return predictive(rng_key, *args, **kwargs)


def diagnostics(result: ADVIResult) -> dict[str, Any]:
    """The fit's scalar diagnostics as netCDF-safe attributes (str, int, float)."""
    khat = result.pareto_khat
    return {
        "inference_library": "advi", "inference_library_version": __version__,
        "family": result.approximation.family.name, "converged": int(result.converged),
        "convergence_reason": result.convergence_reason,
        "num_iterations": int(result.num_iterations),
        "pareto_khat": math.nan if khat is None else float(khat),
        "eta": float(result.eta), "start": result.start, "wall_s": float(result.wall_s),
    }


def _history_dataset(history: Any) -> Any:
    import xarray as xr

    columns = {name: ("evaluation", np.asarray(value))
               for name, value in history._asdict().items() if value is not None}
    return xr.Dataset(columns, coords={"evaluation": np.arange(len(history.iteration))})


def numpyro_guide(result: ADVIResult, prefix: str = "auto"
                  ) -> tuple[AutoContinuous, dict[str, Array]]:
    """q as a NumPyro autoguide and its parameters.

    ``numpyro.infer.Predictive(model, guide=guide, params=params, num_samples=S)`` then
    draws from q (and the posterior predictive), and ``SVI`` can continue from ``params``.

    Args:
        result: an :class:`advi.ADVIResult` of a NumPyro model.
        prefix: the guide's prefix (NumPyro's default "auto").

    Returns:
        ``(guide, params)``: mean-field: ``AutoDiagonalNormal`` with ``{prefix}_loc`` and
        ``{prefix}_scale`` (K,); full-rank: ``AutoMultivariateNormal`` with ``{prefix}_loc``
        (K,) and ``{prefix}_scale_tril`` (K, K), the Cholesky factor of q's covariance in
        the guide's order. Both in the guide's own layout of the sites, read from the guide
        after it is initialised on the model and its data; the dtype of ``result.params``.

    Raises:
        ValueError: for a target of a plain log density, for a latent site whose transform
            is not NumPyro's ``biject_to`` (a positive ordered vector: Stan's transform,
            :mod:`advi.transforms`), naming it, and for a covariance that is not positive
            definite.
    """
    source, args, kwargs = model_of(result.approximation.target)
    fullrank = result.approximation.family.name == "fullrank"
    guide = (AutoMultivariateNormal if fullrank else AutoDiagonalNormal)(source.model,
                                                                        prefix=prefix)
    with scope_of(result.params):
        sites = model_trace(result.approximation.target, result.mean())
        supports = {name: sites[name]["fn"].support for name in source.shapes}
        for name, support in supports.items():
            _check_transform(name, support)
        trace(seed(guide, 0)).get_trace(*args, **kwargs)  # initialises the guide
        order = guide_order(guide, prefix, source, supports)
        return guide, _guide_params(result.params, order, prefix, fullrank)


def _check_transform(name: str, support: Any) -> None:
    ours, theirs = unconstraining_transform(support), biject_to(support)
    inner = [getattr(t, "base_transform", t) for t in (ours, theirs)]
    if type(ours) is not type(theirs) or type(inner[0]) is not type(inner[1]):
        raise ValueError(
            f"latent site {name!r} (support {support}) is unconstrained by "
            f"{type(inner[0]).__name__} here but by {type(inner[1]).__name__} in NumPyro's "
            "guides, so q has no autoguide form; use numpyro.infer.Predictive(model, "
            "posterior_samples=result.sample(key, S)) instead")


def guide_order(guide: AutoContinuous, prefix: str, source: NumPyroModel,
                supports: dict[str, Any]) -> np.ndarray:
    """(K,) int: entry i is the index in zeta of the guide's i-th latent coordinate.

    Read from the initialised guide: ``guide.median`` of a probe loc (distinct values in
    [-1, 1], float64) gives each site's constrained value; its unconstrained value (the
    transforms agree, :func:`_check_transform`) says where in the guide's vector each
    coordinate of each site sits.

    Raises:
        ValueError: when the guide's sites, shapes or transforms differ from the fit's
            (naming the site).
    """
    dim = sum(math.prod(shape) for shape in source.shapes.values())
    with jax.enable_x64(True):
        probe = jnp.linspace(-1.0, 1.0, dim)  # one coordinate: -1
        constrained = guide.median({f"{prefix}_loc": probe})
        ours = source.unravel(jnp.arange(dim, dtype=jnp.float64))
        order = np.full(dim, -1)
        for name, support in supports.items():
            unconstrained = np.asarray(
                unconstraining_transform(support).inv(constrained[name]))
            if unconstrained.shape != tuple(source.shapes[name]):
                raise ValueError(f"site {name!r} has unconstrained shape "
                                 f"{unconstrained.shape} in the guide but "
                                 f"{tuple(source.shapes[name])} in the fit")
            where = ((unconstrained + 1.0) * max(dim - 1, 1) / 2.0).ravel()
            index = np.clip(np.rint(where), 0, dim - 1).astype(int)
            if np.abs(where - index).max(initial=0.0) > 0.25:
                raise ValueError(f"site {name!r}: the guide's unconstrained value is not "
                                 "the probe's (its transform differs from the fit's)")
            order[index] = np.rint(np.asarray(ours[name])).astype(int).ravel()
    if np.array_equal(np.sort(order), np.arange(dim)):
        return order
    raise ValueError(f"the guide's latent layout could not be matched to the fit's sites "
                     f"{sorted(source.shapes)}")


def _guide_params(params: Any, order: np.ndarray, prefix: str, fullrank: bool
                  ) -> dict[str, Array]:
    """The guide's parameters: q's, permuted into the guide's layout ``order``."""
    dtype = jnp.asarray(params.mu).dtype
    mu = np.asarray(params.mu, np.float64)
    out = {f"{prefix}_loc": jnp.asarray(mu[order], dtype)}
    if not fullrank:
        scale = np.exp(np.asarray(params.omega, np.float64))[order]
        out[f"{prefix}_scale"] = jnp.asarray(scale, dtype)
        return out
    tril = np.tril(np.asarray(params.L, np.float64))
    cov = (tril @ tril.T)[np.ix_(order, order)]
    try:
        out[f"{prefix}_scale_tril"] = jnp.asarray(np.linalg.cholesky(cov), dtype)
    except np.linalg.LinAlgError:
        raise ValueError("q's covariance L L^T is not positive definite (a zero on L's "
                         "diagonal): it has no Cholesky factor for the guide") from None
    return out
