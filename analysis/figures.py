"""Axes of the accuracy-against-time figures (Figures 1a, 1b, 4a, 4b, 5a, 5b), as pure
functions of the numbers plotted, so that ``scripts/plot_accuracy.py`` and its tests share
them.

- :func:`time_ticks`: at least three labelled ticks on a log-seconds axis, however narrow
  its range (a range inside one decade gets 1-2-5 or finer steps).
- :func:`split_off_axis`: methods whose whole curve lies far below the other methods' final
  accuracy (static HMC that never accepted, at -35 or -560 nats against ADVI's and NUTS's
  -5), or far above it (a degenerate fit), are left off the y-range, which then shows ADVI
  against NUTS; the figure prints their values.
- :func:`y_limits`: the y-range of the methods kept on the axis.
- :func:`fill_title`: a figure title with the data sizes of the runs actually plotted.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

# Mantissas of the ticks tried in turn on a log axis, coarsest first.
TICK_MANTISSAS: tuple[tuple[int, ...], ...] = (
    (1,), (1, 2, 5), (1, 2, 3, 5, 7), tuple(range(1, 10)))
# Fewest labelled ticks on a log-seconds axis.
MIN_TICKS = 3
# A method is off the y-axis when its best value is below the best final heldout_lpd by
# more than this fraction of |best final| (and at least OFF_AXIS_MIN_NATS).
OFF_AXIS_FRACTION = 0.5
OFF_AXIS_MIN_NATS = 1.0


def time_ticks(low: float, high: float) -> list[float]:
    """At least :data:`MIN_TICKS` round tick values in ``[low, high]`` for a log axis.

    Tries decades (1, 10, 100), then 1-2-5, 1-2-3-5-7 and every integer mantissa; if even
    those give fewer than three (a range narrower than about a factor 1.5), three
    geometrically spaced values rounded to two significant digits.

    Args:
        low, high: the axis range in seconds, 0 < low <= high.

    Raises:
        ValueError: a bound not finite and positive, or low > high.
    """
    if not (0 < low <= high < math.inf):
        raise ValueError(f"time axis range [{low}, {high}]: need 0 < low <= high < inf")
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for mantissas in TICK_MANTISSAS:
        ticks = [m * 10.0**d for d in decades for m in mantissas
                 if low * (1 - 1e-9) <= m * 10.0**d <= high * (1 + 1e-9)]
        if len(ticks) >= MIN_TICKS:
            return ticks
    return [float(f"{t:.2g}") for t in np.geomspace(low, high, MIN_TICKS)]


def split_off_axis(curves: pd.DataFrame, finals: pd.DataFrame
                   ) -> tuple[list[str], list[str], list[str]]:
    """The methods to draw on the y-axis, and those far below or far above it (printed).

    The band of a value v is ``OFF_AXIS_FRACTION * |v|``, at least :data:`OFF_AXIS_MIN_NATS`.
    The reference is the final heldout_lpd (mean over seeds) of the main group of methods:
    the method whose band holds the most methods' final values, the highest on a tie (ADVI
    and NUTS at -4.6 and -5.7 against static HMC and a stuck NUTS at -561 and -489: -4.6).
    A method is below the axis when even its best mean value is
    under the band (static HMC that never accepted), above it when its best mean value and
    its final one are over the band (a degenerate fit whose held-out density grows without
    bound, as a Gaussian mixture collapsing onto exact-zero histogram bins): drawing either
    would squash every other method into one line. A curve that rises over the band and
    falls back (a smoke-scale fit that overfits its tiny data) stays on the axis: its final
    value is not above it.

    Args:
        curves: :func:`advi_repro.analysis.summary.mean_curves` (``method, heldout_lpd``).
        finals: :func:`advi_repro.analysis.summary.final_rows` (``method, heldout_lpd``).

    Returns:
        (on the axis, below it, above it), each in the order of ``curves``' methods.
    """
    final_means = finals.groupby("method")["heldout_lpd"].mean()

    def band_of(value: float) -> float:
        return max(OFF_AXIS_FRACTION * abs(value), OFF_AXIS_MIN_NATS)

    support = {m: sum(abs(other - v) <= band_of(v) for other in final_means)
               for m, v in final_means.items()}
    reference = final_means[max(final_means.index, key=lambda m: (support[m], final_means[m]))]
    band = band_of(reference)
    best_seen = curves.groupby("method", sort=False)["heldout_lpd"].max()
    below = [m for m, value in best_seen.items() if value < reference - band]
    above = [m for m, value in best_seen.items()
             if min(value, final_means[m]) > reference + band]
    return [m for m in best_seen.index if m not in below + above], below, above


def y_limits(curves: pd.DataFrame, finals: pd.DataFrame) -> tuple[float, float]:
    """From a little below the worst final accuracy to the best value seen.

    Early checkpoints far below every method's final accuracy are cut off, as the paper's
    panels do: the bottom is the worst final value minus three times the spread between
    it and the best value (at least 0.1 nats), but no lower than the lowest value.
    Pass the curves and finals of the methods on the axis only (:func:`split_off_axis`).
    """
    top = curves["lpd_max"].max()
    worst_final = finals["heldout_lpd"].min()
    span = max(top - worst_final, 0.1)
    bottom = max(curves["lpd_min"].min(), worst_final - 3 * span)
    return bottom - 0.05 * span, top + 0.1 * span


def data_sizes(infos: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The data sizes the runs recorded (``info.json``'s ``data``: its integers but the
    seed, e.g. ``n_train``, ``n_heldout``, ``num_frames``), each as text with thousands
    separators; a size the runs disagree on lists its values (``"100 / 1,000"``)."""
    values: dict[str, list[int]] = {}
    for info in infos:
        for key, value in info.get("data", {}).items():
            if isinstance(value, int) and not isinstance(value, bool) and key != "seed":
                values.setdefault(key, [])
                if value not in values[key]:
                    values[key].append(value)
    return {key: " / ".join(f"{v:,}" for v in sorted(vs)) for key, vs in values.items()}


def fill_title(template: str, infos: Sequence[Mapping[str, Any]]) -> str:
    """``template`` with its ``{field}``s replaced by the runs' data sizes
    (:func:`data_sizes`), e.g. ``"Subset of {n_train} images"`` -> ``"Subset of 100
    images"`` for smoke runs.

    Raises:
        ValueError: a field the runs did not record (named, with the recorded ones).
    """
    sizes = data_sizes(infos)
    fields = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    missing = [name for name in fields if name not in sizes]
    if missing:
        raise ValueError(f"title {template!r}: the runs' info.json record no {missing} in "
                         f"'data' (recorded: {sorted(sizes)})")
    return template.format(**sizes)
