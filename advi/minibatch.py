"""Minibatching (paper Section 2.6): the model declares its observation axis with
``numpyro.plate(name, N)`` and indexes its data with the plate's indices. The data plate is
the model's only plate, whatever its name; a model with several plates names it with
``minibatch_plate`` (by default the plate called "data"). With ``minibatch_size=B`` the
plate is handed B indices drawn uniformly *with replacement* (O(B) work per draw, unbiased
for the full-data likelihood; NumPyro's own without-replacement subsample costs O(N) per
draw), and NumPyro scales the plate's log likelihood by N/B.

Streamed data (:mod:`advi.streaming`): the model's arrays hold a pool of P of the N rows;
the plate's B indices are drawn from the pool's P rows and its sites are scaled by a further
N/P (``pool_scale``), N/B in all. With a ``sharding`` of the indices (B,) over several
devices (:func:`jax.lax.with_sharding_constraint`), each device reads and evaluates its part
of the minibatch and XLA reduces the log likelihood and its gradient across them.

:func:`data_plate` picks the plate, :func:`seeder` seeds the model with that plate
subsampled (:class:`subsample_plate`), :func:`check_minibatch_size` refuses a bad B
before any tracing, and :func:`check_indexed` names a model that does not index its data
by the plate's indices; :func:`advi.target.from_numpyro` calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax import Array
from jax.sharding import Sharding
from numpyro.handlers import seed
from numpyro.primitives import Messenger


class subsample_plate(Messenger):
    """Hand the plate called ``name`` B indices drawn with replacement from range(N), laid
    out by ``sharding`` (None: as XLA likes), and scale its sample sites by ``pool_scale``
    (None: no further scale; module docstring)."""

    def __init__(self, fn: Callable, name: str, size: int, rng_key: Array | None,
                 pool_scale: float | None = None, sharding: Sharding | None = None) -> None:
        self.name, self.size, self.rng_key = name, size, rng_key
        self.pool_scale, self.sharding = pool_scale, sharding
        super().__init__(fn)

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] == "sample" and self.pool_scale is not None and any(
                frame.name == self.name for frame in msg["cond_indep_stack"]):
            msg["scale"] = self.pool_scale * (1.0 if msg["scale"] is None else msg["scale"])
        if msg["type"] != "plate" or msg["name"] != self.name:
            return
        num_data = int(msg["args"][0])
        key = self.rng_key if self.rng_key is not None else jax.random.PRNGKey(0)
        msg["args"] = (num_data, self.size)
        indices = jax.random.randint(key, (self.size,), 0, num_data)
        if self.sharding is not None:
            indices = jax.lax.with_sharding_constraint(indices, self.sharding)
        msg["value"] = indices


def data_plate(plates: dict[str, int], minibatch_plate: str | None, size: int) -> str:
    """The plate to subsample: the named one, else the only one, else the one called "data".

    Raises:
        ValueError: naming the plates found when none fits, and naming B and N when B > N.
    """
    if minibatch_plate is None:
        found = list(plates) if len(plates) == 1 else [p for p in plates if p == "data"]
        if not found:
            raise ValueError(
                f"minibatch_size={size} needs the model's data plate, but the model has "
                f"{len(plates)} plates {sorted(plates)}; pass minibatch_plate=<one of them>"
            )
        minibatch_plate = found[0]
    elif minibatch_plate not in plates:
        raise ValueError(
            f"minibatch_size={size} was given but the model has no plate named "
            f"{minibatch_plate!r} (its plates: {sorted(plates)}); declare the observation "
            f"axis with numpyro.plate({minibatch_plate!r}, N) or name one of its plates"
        )
    num_data = plates[minibatch_plate]
    if size > num_data:
        raise ValueError(
            f"minibatch_size={size} is larger than the number of data points N={num_data} "
            f"in plate {minibatch_plate!r}; use 1 <= minibatch_size <= {num_data}"
        )
    return minibatch_plate


def pool_scale(num_data: Any, plate: str | None, plates: dict[str, int]) -> float | None:
    """N/P, the further scale of a data plate of P rows (a pool) standing for ``num_data``
    = N rows; None where ``num_data`` is None.

    Raises:
        ValueError: naming ``num_data`` when it is not an integer >= 1, or when it is
            given without minibatching (no plate subsampled).
    """
    if num_data is None:
        return None
    if isinstance(num_data, bool) or not isinstance(num_data, (int, np.integer)) or num_data < 1:
        raise ValueError(f"num_data={num_data!r} must be an integer >= 1 or None")
    if plate is None:
        raise ValueError(f"num_data={num_data} applies to a subsampled data plate; give "
                         "minibatch_size as well")
    return int(num_data) / plates[plate]


def check_indexed(trace: Callable[[], Any], plate: str, size: int, num_data: int) -> None:
    """Run ``trace()`` (an abstract trace of the log density with ``plate`` subsampled to
    ``size`` of its ``num_data`` indices, the full model's trace having succeeded) and turn
    its ValueError or TypeError into one that names the likely cause: the model takes its
    data whole instead of by the plate's indices (``obs=y`` where ``obs=y[idx]`` is
    needed), so B-row and N-row arrays meet.

    Raises:
        ValueError: naming the plate, B, N, the model's own error and the remedy.
    """
    try:
        trace()
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"with minibatch_size={size}, the data plate {plate!r} hands the model {size} of "
            f"its {num_data} indices, and the model then fails ({type(err).__name__}: "
            f"{str(err)[:200]}), which it did not with all of them: most likely it takes "
            "its data whole, not by the plate's indices. Index "
            f"every array of the plate's rows by them: with numpyro.plate({plate!r}, "
            f"{num_data}) as idx: numpyro.sample(..., obs=y[idx]) (and X[idx] for the "
            "predictors)") from err


def check_minibatch_size(minibatch_size: Any) -> None:
    """Refuse a ``minibatch_size`` that is neither None nor an integer >= 1.

    Raises:
        ValueError: naming the value and what is valid.
    """
    if minibatch_size is None:
        return
    if isinstance(minibatch_size, bool) or not isinstance(minibatch_size, (int, np.integer)):
        raise ValueError(f"minibatch_size={minibatch_size!r} must be an integer >= 1 or None")
    if minibatch_size < 1:
        raise ValueError(f"minibatch_size={minibatch_size} must be >= 1 (or None for all data)")


def seeder(model: Callable, plate: str | None, minibatch_size: int | None,
           pool_scale: float | None = None, sharding: Sharding | None = None
           ) -> Callable[[Array | None], Callable]:
    """``seeded(rng_key)``: the model seeded with ``rng_key`` (None: key 0), its data plate
    ``plate`` (if any) subsampled to ``minibatch_size`` indices drawn with that key
    (``pool_scale``, ``sharding``: :class:`subsample_plate`)."""
    def seeded(rng_key: Array | None) -> Callable:
        key = jax.random.PRNGKey(0) if rng_key is None else rng_key
        if plate is None or minibatch_size is None:
            return seed(model, key)
        return seed(subsample_plate(model, plate, minibatch_size, rng_key, pool_scale,
                                    sharding), key)

    return seeded
