"""Snakemake script: an experiment's summary table from its traces (rules/figures.smk).

Reads exactly the rule's inputs: ``traces`` and ``infos`` (how each run ended, its scale,
scoring and data) of the experiment's planned runs. Writes the table as CSV (columns: see
``advi_repro.analysis.summary.summary_table``), each seed's own table as ``output.seeds``
(``seed_summaries``: the claims are judged on each seed) and as the report's full-width
page, which also says at which scale the runs ran, how each method was scored and on
which data, all from the runs' ``info.json`` (``advi_repro.analysis.report_pages``).
"""

import json
import logging
from pathlib import Path

from advi_repro.analysis.figures import fill_title
from advi_repro.analysis.report_pages import data_lines, draws_setting, html_page, scale_note
from advi_repro.analysis.summary import read_endings, read_traces, seed_summaries, summary_table
from advi_repro.planning.files import atomic_open
from advi_repro.planning.scriptlog import log_to


def scoring_lines(infos: list[dict]) -> list[str]:
    """One line per method: its label and how its runs were scored (``draws_setting``)."""
    settings: dict[str, str] = {}
    for info in infos:
        settings.setdefault(info["label"], draws_setting(info))
    return [f"{label}: {setting}." for label, setting in settings.items()]


def main() -> None:
    """Reads the rule's inputs; writes ``output.table`` (CSV) and ``output.page`` (HTML)."""
    log_to(snakemake.log[0])  # noqa: F821
    params, inputs, output = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    traces = read_traces(inputs.traces)
    table = summary_table(traces, reference=params.reference, tolerance=params.tolerance,
                          preferred=params.methods, endings=read_endings(inputs.infos))
    with atomic_open(output.table) as f:
        table.to_csv(f, index=False, float_format="%.4g", na_rep="n/a")
    per_seed = seed_summaries(traces, reference=params.reference, tolerance=params.tolerance,
                              preferred=params.methods)
    with atomic_open(output.seeds) as f:
        per_seed.to_csv(f, index=False, float_format="%.4g", na_rep="n/a")
    infos = [json.loads(Path(path).read_text()) for path in inputs.infos]
    seeds = sorted({info["seed"] for info in infos})
    about = [scale_note(infos), f"Seeds: {', '.join(map(str, seeds))}.", *data_lines(infos),
             "Scoring: " + " ".join(scoring_lines(infos))]
    title = f"{fill_title(params.title, infos)}: summary ({params.experiment})"
    with atomic_open(output.page) as f:
        f.write(html_page(title, about, table))
    logging.info("summary of %d traces (%s):\n%s", len(inputs.traces), ", ".join(inputs.traces),
                 table.to_string(index=False))


if __name__ == "__main__":
    main()
