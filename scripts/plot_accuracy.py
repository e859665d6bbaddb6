"""Snakemake script: held-out accuracy against seconds, one line per method (Figures 1a,
1b, 4a, 4b, 5a, 5b).

Reads exactly the traces the rule declares (``snakemake.input.traces``: the experiment's
planned runs); each method's line is the mean over seeds at each checkpoint, with the
range over seeds shaded when there are several. Axes as the paper: seconds on a log scale,
average log predictive on y. A method with no checkpoint after 0 s (an HMC run that could
not make one transition within its budget) appears in the legend only; a curve of one or
two checkpoints gets markers. The log names each run plotted and its final value.
"""

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from runners.files import atomic_open  # noqa: E402
from runners.summary import final_rows, mean_curves, method_order, read_traces  # noqa: E402


def y_limits(curves: pd.DataFrame, finals: pd.DataFrame) -> tuple[float, float]:
    """From a little below the worst final accuracy to the best value seen.

    Early checkpoints far below every method's final accuracy are cut off, as the paper's
    panels do: the bottom is the worst final value minus three times the spread between
    it and the best value (at least 0.1 nats), but no lower than the lowest value.
    """
    top = curves["lpd_max"].max()
    worst_final = finals["heldout_lpd"].min()
    span = max(top - worst_final, 0.1)
    bottom = max(curves["lpd_min"].min(), worst_final - 3 * span)
    return bottom - 0.05 * span, top + 0.1 * span


def plot(traces: pd.DataFrame, *, title: str, methods: list[str]) -> plt.Figure:
    """The figure of one experiment's traces."""
    curves = mean_curves(traces[traces["wall_s"] > 0])
    fig, ax = plt.subplots(figsize=(4.8, 3.6), layout="constrained")
    for method in method_order(traces, methods):
        curve = curves[curves["method"] == method]
        if curve.empty:
            label = traces.loc[traces["method"] == method, "label"].iloc[0]
            ax.plot([], [], label=f"{label} (no checkpoint after 0 s)")
            continue
        (line,) = ax.plot(curve["wall_s"], curve["heldout_lpd"], label=curve["label"].iloc[0],
                          marker="o" if len(curve) < 3 else None, markersize=4)
        if curve["runs"].max() > 1:
            ax.fill_between(curve["wall_s"], curve["lpd_min"], curve["lpd_max"],
                            color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # labels on the decades only
    ax.set_ylim(*y_limits(curves, final_rows(traces)))
    ax.set_xlabel("Seconds")
    ax.set_ylabel("Average Log Predictive")
    ax.set_title(title)
    ax.legend(loc="best", frameon=False)
    return fig


logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
params, inputs = snakemake.params, snakemake.input  # noqa: F821
traces = read_traces(inputs.traces)
for (method, seed), rows in traces.groupby(["method", "seed"]):
    logging.info("plotted %s seed %d: %d checkpoints, final heldout_lpd %.6g", method, seed,
                 len(rows), rows.sort_values("iteration")["heldout_lpd"].iloc[-1])
figure = plot(traces, title=params.title, methods=params.methods)
for path in snakemake.output:  # noqa: F821
    with atomic_open(path, "wb") as f:
        figure.savefig(f, format=path.rsplit(".", 1)[1], dpi=150)
    logging.info("wrote %s", path)
