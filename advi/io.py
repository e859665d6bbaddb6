"""Save a fit to a portable file and load it back against its model.

The file is a NumPy ``.npz`` archive holding only arrays and a JSON header, readable with
``numpy.load(path, allow_pickle=False)``; nothing in it is a pickled closure (a
:class:`advi.Target` holds functions of the model, which ``pickle`` cannot store). Arrays:
``params.<field>`` (q's parameters in zeta-space, their dtype kept), ``elbo_history.<column>``
(:class:`advi.ELBOHistory`) and ``khat_log_weights`` when drawn. Header (``header``, a JSON
string): the format and its version, the library's version, the family, K, the latent
sites and their zeta shapes in the model's order, the fit's scalar fields (eta, converged,
convergence_reason, num_iterations, seconds, restarts, warnings, start, redraws,
preset) and Pareto k-hat. The fit's options are not stored (:class:`advi.ADVIResult` does not keep
them).

:func:`load` rebuilds the target from the model and its data with :func:`advi.from_numpyro`
(the full data: minibatching, which only changes the ELBO's gradient, is not restored) and
returns an :class:`advi.ADVIResult` whose ``sample`` and ``mean`` equal the saved fit's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from .families import FullRankParams, MeanFieldParams, get_family
from .precision import scope_of
from .result import ADVIResult, Approximation, ELBOHistory
from .target import Target, from_numpyro

FORMAT, FORMAT_VERSION = "advi-result", 1
SCALARS = ("eta", "eta_adapted", "converged", "convergence_reason", "num_iterations",
           "wall_s", "adapt_s", "compile_s", "start", "redraws")
"""The :class:`advi.ADVIResult` fields stored as they are in the header."""
PARAMS: dict[str, Callable[..., Any]] = {"meanfield": MeanFieldParams,
                                         "fullrank": FullRankParams}


def site_shapes(target: Target) -> dict[str, tuple[int, ...]]:
    """Latent site -> zeta shape, in the model's order; ``{"zeta": (K,)}`` for a log
    density."""
    if target.numpyro is None:
        return {"zeta": (target.dim,)}
    return {name: tuple(shape) for name, shape in target.numpyro.shapes.items()}


def save(result: ADVIResult, path: str | os.PathLike) -> None:
    """Write ``result`` to ``path`` (an ``.npz`` archive, the module docstring's layout).

    Written to a temporary file in the same folder, then moved over ``path`` with
    ``os.replace``: a reader sees the old file or the whole new one. ``path`` is used as
    given (no ``.npz`` is appended). Draws Pareto k-hat's log weights if not yet drawn.

    Raises:
        OSError: when the folder cannot be written.
    """
    from . import __version__  # here: advi/__init__ imports advi.io before setting it

    khat = result.pareto_khat
    header = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "version": __version__,
        "family": result.approximation.family.name, "dim": int(result.approximation.target.dim),
        "sites": [[name, list(shape)] for name, shape
                  in site_shapes(result.approximation.target).items()],
        **{name: getattr(result, name) for name in SCALARS},
        "restarts": [list(r) for r in result.restarts], "warnings": list(result.warnings),
        "pareto_khat": None if khat is None else float(khat), "preset": result.preset,
    }
    arrays: dict[str, Any] = {f"params.{k}": np.asarray(v)
                              for k, v in result.params._asdict().items()}
    arrays |= {f"elbo_history.{k}": np.asarray(v)
               for k, v in result.elbo_history._asdict().items() if v is not None}
    if result.khat_log_weights is not None:
        arrays["khat_log_weights"] = np.asarray(result.khat_log_weights)
    path = Path(path)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.",
                                     suffix=".tmp", delete=False) as file:
        try:
            np.savez(file, header=np.array(json.dumps(header, default=_plain)), **arrays)
        except BaseException:
            file.close()
            os.unlink(file.name)
            raise
    os.replace(file.name, path)


def load(path: str | os.PathLike, model: Callable | Target, /, *model_args: Any,
         **model_kwargs: Any) -> ADVIResult:
    """Read a fit written by :func:`save` and rebuild it against ``model`` and its data.

    Args:
        path: the file.
        model: the NumPyro model that was fitted (or the :class:`advi.Target` of a plain
            log density), called as ``model(*model_args, **model_kwargs)``.

    Returns:
        an :class:`advi.ADVIResult`: q (its dtype kept), its target on the given data, the
        ELBO history and the stored fields (the seconds are the original fit's;
        ``khat_weights_fn`` returns the stored log weights, or is None).

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        ValueError: for a file that is not a saved fit, and when the model's latent sites
            or their shapes differ from the file's, naming the site and both shapes; before
            any compilation. Errors of :func:`advi.from_numpyro` on the data pass through.
    """
    header, arrays = _read(Path(path))
    target = model if isinstance(model, Target) else from_numpyro(model, model_args,
                                                                  model_kwargs)
    _check_sites({name: tuple(shape) for name, shape in header["sites"]},
                 site_shapes(target), path)
    family = get_family(header["family"])
    stored = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith("params.")}
    with scope_of(stored):
        params = PARAMS[family.name](**{k: jnp.asarray(v) for k, v in stored.items()})
    weights = arrays.get("khat_log_weights")
    history = ELBOHistory(**{k.split(".", 1)[1]: v for k, v in arrays.items()
                             if k.startswith("elbo_history.")})
    return ADVIResult(
        approximation=Approximation(family, params, target), elbo_history=history,
        khat_weights_fn=None if weights is None else (lambda: weights),
        restarts=tuple(tuple(r) for r in header["restarts"]),
        warnings=tuple(header["warnings"]), preset=header.get("preset"),  # older files: none
        **{k: header[k] for k in SCALARS})


def _plain(value: Any) -> Any:
    """A NumPy or JAX scalar as the Python number JSON can write."""
    return np.asarray(value).item()


def _read(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and the arrays of a saved fit.

    Raises:
        ValueError: naming ``path`` when it is not an ``.npz`` archive written by
            :func:`save` (or is of a newer format version).
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        header = json.loads(str(arrays.pop("header")))
    except (KeyError, ValueError, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{str(path)!r} is not a fit saved by advi.save ({err})") from err
    if header.get("format") != FORMAT or header.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{str(path)!r} holds format {header.get('format')!r} version "
                         f"{header.get('format_version')!r}; advi.load reads {FORMAT!r} up "
                         f"to version {FORMAT_VERSION}")
    return header, arrays


def _check_sites(saved: dict[str, tuple[int, ...]], found: dict[str, tuple[int, ...]],
                 path: str | os.PathLike) -> None:
    """Raise a ValueError naming the first latent site missing, new or of another shape."""
    for name, shape in saved.items():
        if name not in found:
            raise ValueError(f"latent site {name!r} (zeta shape {shape}) of the fit in "
                             f"{str(path)!r} is not in the model (its latent sites: "
                             f"{sorted(found)})")
        if found[name] != shape:
            raise ValueError(f"latent site {name!r} has zeta shape {found[name]} in the model "
                             f"but {shape} in the fit in {str(path)!r}: the model or its data "
                             "changed since it was saved")
    new = sorted(set(found) - set(saved))
    if new:
        raise ValueError(f"the model has latent sites {new} that the fit in {str(path)!r} "
                         f"does not (its sites: {sorted(saved)})")
