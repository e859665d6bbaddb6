"""Snakemake script: simulate an experiment's data from its seed with its model module's
``simulate`` (rules/data.smk)."""

import logging
from pathlib import Path

from advi_repro.planning.data import simulate
from advi_repro.planning.scriptlog import log_to

log_to(snakemake.log[0])  # noqa: F821
job = snakemake.params.job  # noqa: F821
path = simulate(job.model, job.seed, job.kwargs, Path(snakemake.output[0]))  # noqa: F821
logging.info("simulated %s.simulate(seed=%d, %s) -> %s", job.model, job.seed, job.kwargs, path)
