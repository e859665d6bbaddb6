"""Tables from traces, for the figures and the report: mean curves and a per-method summary.

Everything here reads the ``trace.csv`` files it is given (columns of
:mod:`advi_repro.runners.trace`),
and their runs' ``info.json`` for how each run ended: never a folder's whole contents, so a
table shows exactly the runs a rule declares.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd


def read_traces(paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """The given ``trace.csv`` files (those a rule declares), stacked.

    Raises:
        ValueError: ``paths`` is empty.
        FileNotFoundError: one of them does not exist (named).
    """
    if not paths:
        raise ValueError("no traces given: read_traces needs at least one trace.csv")
    return pd.concat([pd.read_csv(path) for path in paths], ignore_index=True)


def run_ending(info: Mapping) -> str:
    """How a run ended, in words, from its ``info.json`` (the runners' facts): ADVI's
    convergence or why not; MCMC's transitions done and why it stopped early, if it did."""
    its = info.get("iterations")
    if "converged" in info:  # ADVI
        if info["converged"]:
            return f"converged ({info.get('convergence_reason')} rule) at iteration {its}"
        if info.get("stopped_by_budget"):
            return f"stopped by the budget at iteration {its}"
        return f"not converged: {info.get('convergence_reason')} at iteration {its}"
    if info.get("stop_reason"):
        return f"stopped after {its} transitions: {info['stop_reason']}"
    return f"all {its} transitions"


def read_endings(infos: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """``method, seed, ended`` (:func:`run_ending`) of each given ``info.json`` (its own
    ``method`` and ``seed``); empty for no files.

    Raises:
        FileNotFoundError: one of them does not exist (named).
    """
    rows = []
    for path in infos:
        info = json.loads(Path(path).read_text())
        rows.append({"method": info["method"], "seed": int(info["seed"]),
                     "ended": run_ending(info)})
    return pd.DataFrame(rows, columns=["method", "seed", "ended"])


def method_order(traces: pd.DataFrame, preferred: Sequence[str] = ()) -> list[str]:
    """The methods present: those of ``preferred`` in its order, then the others by name."""
    present = set(traces["method"])
    return [m for m in preferred if m in present] + sorted(present.difference(preferred))


def mean_curves(traces: pd.DataFrame) -> pd.DataFrame:
    """The accuracy-against-time curve of each method, averaged over seeds at each checkpoint.

    Runs of one method checkpoint at the same iterations, so seeds are aligned by
    ``iteration``; rows without a score are dropped.

    Returns:
        One row per (method, iteration): ``method, label, iteration, wall_s`` (mean),
        ``heldout_lpd`` (mean), ``lpd_min``, ``lpd_max`` (range over seeds), ``runs``.
    """
    scored = traces.dropna(subset=["heldout_lpd"])
    curves = scored.groupby(["method", "label", "iteration"], as_index=False).agg(
        wall_s=("wall_s", "mean"),
        heldout_lpd=("heldout_lpd", "mean"),
        lpd_min=("heldout_lpd", "min"),
        lpd_max=("heldout_lpd", "max"),
        runs=("seed", "nunique"),
    )
    return curves.sort_values(["method", "iteration"], ignore_index=True)


def final_rows(traces: pd.DataFrame) -> pd.DataFrame:
    """The last checkpoint of each run (method, seed)."""
    ordered = traces.sort_values("iteration")
    return ordered.groupby(["method", "seed"], as_index=False).tail(1)


def seconds_to_reach(curve: pd.DataFrame, target: float) -> float:
    """The first mean ``wall_s`` of ``curve`` whose mean heldout_lpd is >= ``target``, or NaN."""
    reached = curve.loc[curve["heldout_lpd"] >= target, "wall_s"]
    return float(reached.iloc[0]) if len(reached) else float("nan")


def summary_table(
    traces: pd.DataFrame,
    *,
    reference: str | None,
    tolerance: float = 0.01,
    preferred: Sequence[str] = (),
    endings: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Final accuracy per method, and how long each took to come close to ``reference``'s.

    Args:
        traces: stacked traces (:func:`read_traces`).
        reference: the method whose final heldout_lpd (mean over seeds) is the target
            (e.g. NUTS, or the largest minibatch of stochastic ADVI); None: no target, and
            no ``seconds_to_...`` column.
        tolerance: relative distance counted as close: the target is
            ref - tolerance * |ref|.
        preferred: method order of the rows (:func:`method_order`).
        endings: :func:`read_endings`; adds the column ``ended``, how the method's run with
            the lowest seed ended (None: no such column).

    Returns:
        One row per method: ``method, label, runs, final_heldout_lpd`` (mean over seeds),
        ``final_heldout_lpd_sd`` (NaN with one seed), ``final_wall_s`` (mean), and
        ``seconds_to_<tolerance>pct_of_<reference>`` on the mean curve (NaN: never reached,
        or no reference run), and the same read the other way round,
        ``seconds_for_<reference>_to_<tolerance>pct_of_final``: the seconds the reference's
        mean curve took to come within ``tolerance`` of this method's final heldout_lpd
        (NaN: not before the reference's runs ended, or no reference run); both absent when
        ``reference`` is None. With two seeds or more, also ``<seconds_to column>_sd``: the
        sd over seeds of each seed's own seconds to its reference run's final value
        (:func:`seed_summaries`; NaN where fewer than two seeds came within it).
    """
    table = _summary(traces, reference=reference, tolerance=tolerance, preferred=preferred,
                     endings=endings)
    if reference is not None and traces["seed"].nunique() > 1:
        per_seed = seed_summaries(traces, reference=reference, tolerance=tolerance,
                                  preferred=preferred)
        column = reach_column(reference, tolerance)
        spread = per_seed.groupby("method")[column].std()  # NaN where < 2 seeds reached
        at = table.columns.get_loc(column) + 1
        table.insert(at, f"{column}_sd", table["method"].map(spread).astype(float))
    return table


def seed_summaries(traces: pd.DataFrame, *, reference: str | None, tolerance: float = 0.01,
                   preferred: Sequence[str] = ()) -> pd.DataFrame:
    """Each seed's own summary table (:func:`summary_table` of its runs alone: its methods
    timed against its own reference run), stacked, with a first column ``seed``: what a
    claim is judged on seed by seed (``advi_repro.analysis.claims``)."""
    tables = [_summary(traces[traces["seed"] == seed], reference=reference,
                       tolerance=tolerance, preferred=preferred).assign(seed=int(seed))
              for seed in sorted(traces["seed"].unique())]
    stacked = pd.concat(tables, ignore_index=True)
    return stacked[["seed", *[c for c in stacked.columns if c != "seed"]]]


def _summary(traces: pd.DataFrame, *, reference: str | None, tolerance: float,
             preferred: Sequence[str], endings: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`summary_table` without the seconds' spread over seeds."""
    finals = final_rows(traces)
    curves = mean_curves(traces)
    target = np.nan
    ref_curve = curves.iloc[:0]
    if reference is not None:
        ref_value = finals.loc[finals["method"] == reference, "heldout_lpd"].mean()
        target = ref_value - tolerance * abs(ref_value)
        ref_curve = curves[curves["method"] == reference]
    rows = []
    for method in method_order(traces, preferred):
        final = finals[finals["method"] == method]
        curve = curves[curves["method"] == method]
        row = {
            "method": method,
            "label": final["label"].iloc[0],
            "runs": len(final),
            "final_heldout_lpd": final["heldout_lpd"].mean(),
            "final_heldout_lpd_sd": final["heldout_lpd"].std() if len(final) > 1 else np.nan,
            "final_wall_s": final["wall_s"].mean(),
        }
        if reference is not None:
            row[reach_column(reference, tolerance)] = (
                seconds_to_reach(curve, target) if np.isfinite(target) else np.nan)
            own = row["final_heldout_lpd"]
            row[reverse_reach_column(reference, tolerance)] = seconds_to_reach(
                ref_curve, own - tolerance * abs(own))
        if endings is not None:
            ended = endings[endings["method"] == method].sort_values("seed")["ended"]
            row["ended"] = ended.iloc[0] if len(ended) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def reach_column(reference: str, tolerance: float) -> str:
    """The summary's column ``seconds_to_<tolerance in %>pct_of_<reference>``."""
    return f"seconds_to_{tolerance * 100:g}pct_of_{reference}"


def reverse_reach_column(reference: str, tolerance: float) -> str:
    """The summary's column ``seconds_for_<reference>_to_<tolerance in %>pct_of_final``: per
    method, the seconds the reference took to come within the tolerance of that method's
    final value (:func:`reach_column` read the other way round)."""
    return f"seconds_for_{reference}_to_{tolerance * 100:g}pct_of_final"
