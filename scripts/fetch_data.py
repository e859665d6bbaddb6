"""Snakemake script: fetch a real data set, sha256-checked (rules/data.smk)."""

import logging
from pathlib import Path

from advi_repro.planning.data import fetch
from advi_repro.planning.scriptlog import log_to

log_to(snakemake.log[0])  # noqa: F821
job = snakemake.params.job  # noqa: F821
path = fetch(job.name, Path(snakemake.output[0]), job.mirror_dir)  # noqa: F821
logging.info("fetched %s (mirror_dir %s) -> %s", job.name, job.mirror_dir, path)
