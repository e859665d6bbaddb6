"""Snakemake script: held-out accuracy against seconds, one line per method (Figures 1a,
1b, 4a, 4b, 5a, 5b).

Reads exactly the traces the rule declares (``snakemake.input.traces``: the experiment's
planned runs) and their ``info.json`` (``snakemake.input.infos``: the data sizes in the
title). Each method's line is the mean over seeds at each checkpoint, with the range over
seeds shaded when there are several. Axes as the paper: seconds on a log scale (at least
three labelled ticks, :func:`advi_repro.analysis.figures.time_ticks`), average log predictive on y.
A method whose whole curve lies far below the others (static HMC that never accepted), or
far above them (a degenerate fit), is left off the y-range so that the others can be told
apart: a triangle on the bottom (top) edge marks its last checkpoint and its legend entry
prints its final value
(:func:`advi_repro.analysis.figures.split_off_axis`). The legend sits right of the axes, off the
data. A method with no checkpoint after 0 s (an HMC run that could not make one transition
within its budget) appears in the legend only; a curve of one or two checkpoints gets
markers. The log names each run plotted and its final value.
"""

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator  # noqa: E402

from advi_repro.analysis.figures import fill_title, split_off_axis, time_ticks, y_limits  # noqa: E402
from advi_repro.analysis.summary import final_rows, mean_curves, method_order, read_traces  # noqa: E402
from advi_repro.planning.files import atomic_open  # noqa: E402
from advi_repro.planning.scriptlog import log_to


def set_time_axis(ax: plt.Axes, seconds: pd.Series) -> None:
    """A log-seconds x-axis over ``seconds`` (padded 10% either side) with at least three
    labelled round ticks, plain numbers (``0.5``, ``2``, ``100``), no minor labels."""
    low, high = float(seconds.min()), float(seconds.max())
    ax.set_xscale("log")
    ax.set_xlim(low / 1.1, high * 1.1)
    ax.xaxis.set_major_locator(FixedLocator(time_ticks(low / 1.1, high * 1.1)))
    ax.xaxis.set_major_formatter(lambda value, _: f"{value:g}")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot(traces: pd.DataFrame, *, title: str, methods: Sequence[str]) -> plt.Figure:
    """The figure of one experiment's traces (see the module docstring)."""
    curves = mean_curves(traces[traces["wall_s"] > 0])
    finals = final_rows(traces)
    on_axis, below, above = split_off_axis(curves, finals)
    bottom, top = y_limits(curves[curves["method"].isin(on_axis)],
                           finals[finals["method"].isin(on_axis)])
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    for method in method_order(traces, methods):
        curve = curves[curves["method"] == method]
        if curve.empty:
            label = traces.loc[traces["method"] == method, "label"].iloc[0]
            ax.plot([], [], label=f"{label} (no checkpoint after 0 s)")
            continue
        label = curve["label"].iloc[0]
        if method in below + above:
            final = finals.loc[finals["method"] == method, "heldout_lpd"].mean()
            side = "below" if method in below else "above"
            ax.plot(curve["wall_s"].iloc[-1], 0 if side == "below" else 1,
                    marker="v" if side == "below" else "^", markersize=8, clip_on=False,
                    linestyle="none", transform=ax.get_xaxis_transform(),
                    label=f"{label} (final {final:.4g}, {side} the axis)")
            continue
        (line,) = ax.plot(curve["wall_s"], curve["heldout_lpd"], label=label,
                          marker="o" if len(curve) < 3 else None, markersize=4)
        if curve["runs"].max() > 1:
            ax.fill_between(curve["wall_s"], curve["lpd_min"], curve["lpd_max"],
                            color=line.get_color(), alpha=0.2, linewidth=0)
    if not curves.empty:
        set_time_axis(ax, curves["wall_s"])
    ax.set_ylim(bottom, top)
    ax.set_xlabel("Seconds")
    ax.set_ylabel("Average Log Predictive")
    ax.set_title(title, fontsize="medium")  # long titles stay within the axes
    fig.legend(loc="outside right upper", frameon=False, fontsize="small")
    return fig


def main() -> None:
    """Reads the rule's inputs and writes its outputs (png and pdf)."""
    log_to(snakemake.log[0])  # noqa: F821
    params, inputs = snakemake.params, snakemake.input  # noqa: F821
    traces = read_traces(inputs.traces)
    for (method, seed), rows in traces.groupby(["method", "seed"]):
        logging.info("plotted %s seed %d: %d checkpoints, final heldout_lpd %.6g", method, seed,
                     len(rows), rows.sort_values("iteration")["heldout_lpd"].iloc[-1])
    infos = [json.loads(Path(path).read_text()) for path in inputs.infos]
    figure = plot(traces, title=fill_title(params.title, infos), methods=params.methods)
    for path in snakemake.output:  # noqa: F821
        with atomic_open(path, "wb") as f:
            figure.savefig(f, format=path.rsplit(".", 1)[1], dpi=150)
        logging.info("wrote %s", path)


if __name__ == "__main__":
    main()
