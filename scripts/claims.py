"""Snakemake script: the reproduction table ``results/claims.csv`` and its report page
``results/claims.html`` (rules/report.smk).

One row per claim of the paper (its experiments E0 to E6): the numbers this run measured,
whether the claim held here and why (criteria: ``advi_repro.analysis.claims``); then one
"no paper claim" row per experiment that tests none. Reads the experiments' summary tables,
their runs' ``info.json`` (data origin, timing set-up, scale) and Figure 3's fit; claims no
planned experiment tests are listed as not run. The page says at
which scale the runs ran (``advi_repro.analysis.report_pages.scale_note``).

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

from advi_repro.analysis.report_pages import html_page, scale_note
from advi_repro.analysis.reproduction import ExperimentResult, claims_table
from advi_repro.analysis.runinfo import data_origin, timing_setup
from advi_repro.planning.files import atomic_open
from advi_repro.planning.scriptlog import log_to


def build(
    experiments: Mapping[str, Mapping[str, Any]],
    infos: Sequence[str | os.PathLike],
    transformation: str | os.PathLike | None,
    *,
    tolerance: float,
) -> pd.DataFrame:
    """The reproduction table from the files of a run of the workflow.

    Args:
        experiments: per planned experiment, ``summary`` (its CSV, ``scripts/summarise.py``),
            optionally ``seeds`` (its per-seed summaries' CSV: the claim is then also judged
            on each seed), ``reference`` (the method the summary times the others against,
            or None) and ``claim_id`` (the claim of the paper it tests, or None).
        infos: the ``info.json`` of every planned run; each names its experiment.
        transformation: Figure 3's fit table
        (``advi_repro.analysis.transformation.transformation_table`` as
            CSV), or None where Figure 3 was not made.
        tolerance: the summaries' tolerance (a fraction of the reference's final value).

    Returns:
        ``advi_repro.analysis.reproduction.claims_table``.
    """
    runs = defaultdict(list)
    for path in infos:
        info = json.loads(Path(path).read_text())
        runs[info["experiment"]].append(info)
    results = []
    for name, experiment in experiments.items():
        results.append(ExperimentResult(
            name=name, claim_id=experiment["claim_id"],
            summary=pd.read_csv(experiment["summary"]), reference=experiment["reference"],
            tolerance=tolerance, data=data_origin(runs[name]),
            setups=method_setups(runs[name]),
            seeds=pd.read_csv(experiment["seeds"]) if experiment.get("seeds") else None,
        ))
    fit = pd.read_csv(transformation) if transformation is not None else None
    return claims_table(fit, results)


def method_setups(infos: Sequence[Mapping[str, Any]]) -> dict[str, str | None]:
    """Per method, the timing set-up its runs recorded
    (``advi_repro.analysis.runinfo.timing_setup``);
    seeds of one method on different set-ups are joined with `` | ``."""
    setups: dict[str, set[str]] = defaultdict(set)
    for info in infos:
        setup = timing_setup(info)
        setups[info["method"]].update([setup] if setup is not None else [])
    return {method: " | ".join(sorted(found)) or None for method, found in setups.items()}


def experiments_of(summaries: Sequence[str], references: str, claim_ids: str,
                   seeds: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """``build``'s experiments from the rule's summaries (``<experiment>.csv``), per-seed
    summaries (``seeds/<experiment>.csv``) and its ``references`` and ``claim_ids``
    parameters, ``"<experiment>: <value or None>, ..."``."""
    by_name = {Path(path).stem: path for path in summaries}
    seeds_of = {Path(path).stem: path for path in seeds}
    claims = _by_experiment(claim_ids)
    return {name: {"summary": by_name[name], "reference": reference,
                   "claim_id": claims[name], "seeds": seeds_of.get(name)}
            for name, reference in _by_experiment(references).items()}


def _by_experiment(text: str) -> dict[str, str | None]:
    """``"<experiment>: <value>, ..."`` as a dict, the value ``None`` as None."""
    pairs = (item.split(": ") for item in text.split(", "))
    return {name: None if value == "None" else value for name, value in pairs}


def main() -> None:
    """Reads the inputs named by the rule and writes ``output.table`` (CSV) and
    ``output.page`` (HTML)."""
    log_to(snakemake.log[0])  # noqa: F821
    params, inputs, output = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    table = build(experiments_of(inputs.summaries, params.references, params.claim_ids,
                                 inputs.seeds),
                  inputs.infos, inputs.transformation, tolerance=params.tolerance)
    with atomic_open(output.table) as f:
        table.to_csv(f, index=False)
    infos = [json.loads(Path(path).read_text()) for path in inputs.infos]
    about = [scale_note(infos), "held: <b>yes</b>; <b>no</b>, with the part that failed in "
             "verdict; <b>cannot tell</b>, where a method the criterion compares was not run; "
             "<b>not run</b>, where no experiment of this run tests the claim; <b>no paper "
             "claim</b>, an experiment that is not in the paper, with its numbers; "
             "held_per_seed: the same criterion on each seed's runs alone. The "
             "criteria and how times are measured: the caption beside this page."]
    with atomic_open(output.page) as f:
        figure = (" (" + table["figure"] + ")").where(table["figure"] != "", "")
        shown = table.assign(claim=table["claim"] + figure)
        f.write(html_page("Reproduction of the paper's claims", about,
                          shown.drop(columns="figure")))
    logging.info("claims:\n%s", table[["claim", "experiment", "held", "verdict"]].to_string())


if __name__ == "__main__":
    main()
