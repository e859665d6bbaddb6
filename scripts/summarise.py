"""Snakemake script: an experiment's summary table from its traces (rules/figures.smk).

Reads exactly the rule's inputs: ``traces`` and ``infos`` (how each run ended) of the
experiment's planned runs. Columns: see ``runners.summary.summary_table``; the report's
caption includes the table.
"""

import logging

from runners.files import atomic_open
from runners.summary import read_endings, read_traces, summary_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)  # noqa: F821
params, inputs = snakemake.params, snakemake.input  # noqa: F821
table = summary_table(
    read_traces(inputs.traces),
    reference=params.reference,
    tolerance=params.tolerance,
    preferred=params.methods,
    endings=read_endings(inputs.infos),
)
with atomic_open(snakemake.output[0]) as f:  # noqa: F821
    table.to_csv(f, index=False, float_format="%.4g", na_rep="n/a")
logging.info("summary of %d traces (%s):\n%s", len(inputs.traces), ", ".join(inputs.traces),
             table.to_string(index=False))
