"""The reproduction table: one row per claim of the paper and experiment, each judged by
:mod:`advi_repro.analysis.claims`'s criteria on the experiment's summary (means over seeds)
and on each seed's own runs; then a "no paper claim" row per experiment that tests none.
``scripts/claims.py`` reads a run's files and writes it as ``claims.csv``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import pandas as pd

from advi_repro.analysis.claims import (
    check_claim_id,
    judge_experiment,
    judge_transformation,
    reach,
)
from advi_repro.analysis.methods import advi_variants
from advi_repro.analysis.paper_claims import CLAIMS

COLUMNS = ("claim", "figure", "paper_claim", "criterion", "experiment", "held",
           "held_per_seed", "verdict", "measured", "data")
"""The columns of the reproduction table (claims.csv)."""


NO_CLAIM = "no paper claim"
"""``held`` of an experiment that tests no claim of the paper (its ``claim_id`` is null)."""


class ExperimentResult(NamedTuple):
    """What the reproduction table needs to know of one planned experiment.

    Attributes:
        name: the experiment (``conf/experiment/<name>.yaml``).
        claim_id: the claim it tests (its YAML's ``claim_id``, ``E1`` to ``E6``), or None.
        summary: its summary table (:func:`advi_repro.analysis.summary.summary_table`).
        reference: the method whose final heldout_lpd the others are timed against (NUTS;
            E6: the largest minibatch), or None.
        tolerance: "within" means within this fraction of the reference's final value.
        data: where its data came from, for the report (e.g. a simulated stand-in).
        setups: per method, what its seconds were measured on
            (:func:`advi_repro.analysis.runinfo.timing_setup`; None: not recorded).
        seeds: each seed's own summary table, stacked with a column ``seed``
            (:func:`advi_repro.analysis.summary.seed_summaries`), on which the claim is
            judged seed by seed; None: not judged per seed.
    """

    name: str
    claim_id: str | None
    summary: pd.DataFrame
    reference: str | None
    tolerance: float
    data: str
    setups: Mapping[str, str | None] | None = None
    seeds: pd.DataFrame | None = None


def _held(held: bool | None) -> str:
    return {True: "yes", False: "no", None: "cannot tell"}[held]


def per_seed(claim: str, experiment: ExperimentResult, suffix: str) -> str:
    """The claim judged on each seed's own summary (the ADVI variant ``suffix`` of
    :func:`advi_variants`): "3 of 3 seeds", "2 of 3 seeds (not seed 1)", with the seeds
    that cannot tell named; "" with fewer than two seeds."""
    if experiment.seeds is None or experiment.seeds["seed"].nunique() < 2:
        return ""
    verdicts = {}
    for seed, table in experiment.seeds.groupby("seed"):
        variants = dict(advi_variants(table.drop(columns="seed").reset_index(drop=True)))
        verdicts[int(seed)] = None if suffix not in variants else judge_experiment(
            claim, variants[suffix], reference=experiment.reference,
            tolerance=experiment.tolerance, setups=experiment.setups).held
    text = f"{sum(v is True for v in verdicts.values())} of {len(verdicts)} seeds"
    missed = [f"not seed {s}" for s, v in verdicts.items() if v is False]
    unknown = [f"seed {s} cannot tell" for s, v in verdicts.items() if v is None]
    return text + (f" ({'; '.join(missed + unknown)})" if missed or unknown else "")


def claims_table(
    transformation: pd.DataFrame | None, experiments: Iterable[ExperimentResult]
) -> pd.DataFrame:
    """The reproduction table: one row per claim and experiment, claims in the paper's order;
    an experiment that also ran robust ADVI gets a second row, "<name> (ADVI robust)", judged
    with robust ADVI in place of Stan's (:func:`advi_variants`); last, a row for each
    experiment that tests no claim of the paper (``claim_id`` None), with its numbers.

    Args:
        transformation: :func:`transformation_table` of Figure 3's fit, or None if not run.
        experiments: the planned experiments; claims no experiment tests are "not run".

    Returns:
        Columns :data:`COLUMNS`; ``held`` (judged on the summary: means over seeds) is
        ``yes``, ``no``, ``cannot tell``, ``not run`` or :data:`NO_CLAIM`;
        ``held_per_seed`` the same criterion on each seed's own runs (:func:`per_seed`).

    Raises:
        ValueError: an experiment's ``claim_id`` is not a claim of the paper.
    """
    by_claim: dict[str | None, list[ExperimentResult]] = {}
    for experiment in experiments:
        check_claim_id(experiment.name, experiment.claim_id)
        by_claim.setdefault(experiment.claim_id, []).append(experiment)
    rows: list[dict[str, Any]] = []
    for claim in CLAIMS:
        row = {"claim": claim.id, "figure": claim.figure, "paper_claim": claim.text,
               "criterion": claim.criterion}
        if claim.id == "E0":
            rows.append({**row, **_transformation_row(transformation)})
            continue
        if claim.id not in by_claim:
            rows.append({**row, "experiment": "", "measured": "", "held": "not run",
                         "verdict": "no experiment of this run tests it", "data": ""})
        for experiment in by_claim.get(claim.id, []):
            for suffix, summary in advi_variants(experiment.summary):
                verdict = judge_experiment(claim.id, summary, reference=experiment.reference,
                                           tolerance=experiment.tolerance,
                                           setups=experiment.setups)
                rows.append({**row, "experiment": experiment.name + suffix,
                             "measured": verdict.measured, "held": _held(verdict.held),
                             "held_per_seed": per_seed(claim.id, experiment, suffix),
                             "verdict": verdict.reason, "data": experiment.data})
    rows += [_unclaimed_row(experiment) for experiment in by_claim.get(None, [])]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _transformation_row(transformation: pd.DataFrame | None) -> dict[str, Any]:
    """E0's row (less the claim's own columns) from Figure 3's fit table, or "not run"."""
    if transformation is None:
        return {"experiment": "", "measured": "", "held": "not run",
                "verdict": "Figure 3 was not made", "data": ""}
    verdict = judge_transformation(transformation)
    return {"experiment": "fig3_transformations", "measured": verdict.measured,
            "held": _held(verdict.held), "verdict": verdict.reason,
            "data": "simulated Poisson counts"}


def _unclaimed_row(experiment: ExperimentResult) -> dict[str, Any]:
    """The row of an experiment that tests no claim of the paper: what it measured."""
    _, parts = reach(experiment.summary, reference=experiment.reference,
                      tolerance=experiment.tolerance)
    return {"claim": "none", "figure": "", "paper_claim": "", "criterion": "",
            "experiment": experiment.name, "held": NO_CLAIM,
            "verdict": "the experiment tests no claim of the paper (claim_id: null): its "
                       "numbers are shown, not judged",
            "measured": "; ".join(parts), "data": experiment.data}
