"""Snakemake script: the reproduction table ``results/claims.csv`` (rules/report.smk).

One row per claim of the paper (PAPER.md, E0 to E6): the numbers this run measured, whether
the claim held here and why (criteria: ``runners.claims``). Reads the experiments' summary
tables, their runs' ``info.json`` (model, minibatching, data origin) and Figure 3's fit;
claims no planned experiment tests are listed as not run.

Run by Snakemake, or ``build`` from Python (tests).
"""


import json
import logging
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from runners.claims import ExperimentResult, claims_table, experiment_facts
from runners.files import atomic_open


def build(
    experiments: Mapping[str, Mapping[str, Any]],
    infos: Sequence[str | os.PathLike],
    transformation: str | os.PathLike | None,
    *,
    tolerance: float,
) -> pd.DataFrame:
    """The reproduction table from the files of a run of the workflow.

    Args:
        experiments: per planned experiment, ``summary`` (its CSV, ``scripts/summarise.py``)
            and ``reference`` (the method the summary times the others against, or None).
        infos: the ``info.json`` of every planned run; each names its experiment.
        transformation: Figure 3's fit table (``runners.claims.transformation_table`` as
            CSV), or None where Figure 3 was not made.
        tolerance: the summaries' tolerance (a fraction of the reference's final value).

    Returns:
        ``runners.claims.claims_table``.
    """
    runs = defaultdict(list)
    for path in infos:
        info = json.loads(Path(path).read_text())
        runs[info["experiment"]].append(info)
    results = []
    for name, experiment in experiments.items():
        model, minibatched, data = experiment_facts(runs[name])
        results.append(ExperimentResult(
            name=name, model=model, summary=pd.read_csv(experiment["summary"]),
            reference=experiment["reference"], tolerance=tolerance, minibatched=minibatched,
            data=data,
        ))
    fit = pd.read_csv(transformation) if transformation is not None else None
    return claims_table(fit, results)


def main() -> None:
    """Reads the inputs named by the rule and writes ``snakemake.output[0]``."""
    logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
    params, inputs = snakemake.params, snakemake.input  # noqa: F821
    table = build(params.experiments, inputs.infos, inputs.transformation,
                  tolerance=params.tolerance)
    with atomic_open(snakemake.output[0]) as f:  # noqa: F821
        table.to_csv(f, index=False)
    logging.info("claims:\n%s", table[["claim", "experiment", "held", "verdict"]].to_string())


if __name__ == "__main__":
    main()
