"""Snakemake script: the E5/E6 colour histograms as a float32 .npy (rules/data.smk).

A simulated imageCLEF stand-in from the data's seed, or, with ``data.image_dir``, the
standardised RGB histograms of the images in that folder (``advi_repro.planning.data``).
"""

import logging
from pathlib import Path

import numpy as np

from advi_repro.planning.data import imageclef_features
from advi_repro.planning.scriptlog import log_to

log_to(snakemake.log[0])  # noqa: F821
job = snakemake.params.job  # noqa: F821
path = imageclef_features(
    Path(snakemake.output[0]),  # noqa: F821
    simulator=job.name, seed=job.seed, kwargs=job.kwargs, image_dir=job.image_dir,
    num_heldout=job.num_heldout,
)
shape = np.load(path, mmap_mode="r").shape
if job.image_dir is None:
    logging.info("simulated %s(seed=%d, %s): %s rows x dims -> %s", job.name, job.seed,
                 job.kwargs, shape, path)
else:
    logging.info("RGB histograms of the images in %s (last %d held out): %s -> %s",
                 job.image_dir, job.num_heldout, shape, path)
