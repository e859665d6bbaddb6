"""Snakemake script: the report's page of the runs it shows (rules/report.smk).

Reads the ``info.json`` of every planned run (the rule's inputs) and writes one row per
experiment and method: seeds, scale, budget, data sizes, scoring, how it ended, the code
that made it (``advi_repro.analysis.report_pages.runs_table``), under a note on what the
runs' scale means and, when some runs were made by code other than the checkout's
(``params.checkout``), a note naming them (``advi_repro.analysis.runinfo.code_note``).
"""

import json
import logging
from pathlib import Path

from advi_repro.analysis.report_pages import html_page, runs_table, scale_note
from advi_repro.analysis.runinfo import code_note
from advi_repro.planning.files import atomic_open
from advi_repro.planning.scriptlog import log_to


def main() -> None:
    """Reads ``input.infos``; writes ``output[0]`` (HTML)."""
    log_to(snakemake.log[0])  # noqa: F821
    infos = [json.loads(Path(p).read_text()) for p in snakemake.input.infos]  # noqa: F821
    checkout = snakemake.params.checkout  # noqa: F821
    table = runs_table(infos, checkout)
    about = [scale_note(infos), "One row per experiment and method, read from the runs' "
             "own info.json (scoring: what each checkpoint scores; code: the code that made "
             "the runs, against this checkout's; final_heldout_lpd: nats per held-out "
             "observation, the mean over seeds)."]
    note = code_note(infos, checkout)
    if note is not None:
        about.insert(1, note)
    with atomic_open(snakemake.output[0]) as f:  # noqa: F821
        f.write(html_page("Runs of this report", about, table))
    logging.info("%d runs:\n%s", len(infos), table.to_string(index=False))


if __name__ == "__main__":
    main()
