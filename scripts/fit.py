"""Run one experiment x method x seed under the timing protocol (Hydra entry point).

    python scripts/fit.py experiment=election88 method=nuts scale=smoke seed=1
    python scripts/fit.py -m experiment=linreg_ard method=advi method.grad_samples=1,10

Writes ``<results_dir>/runs/<scale>/<experiment>/<method>/seed<k>/{trace.csv,info.json}``;
the options are in ``conf/`` and ``planning/config.py``. The config is the ``conf/`` of the
checkout this script is in, whichever checkout the packages are installed from.

Ctrl-C (SIGINT) or SIGTERM stops the run at its next checkpoint, keeps it as
``seed<k>.partial`` and exits with 130 or 143; a second Ctrl-C stops at once. The run gets
SIGTERM when its parent process dies (the workflow, killed), so it never runs on alone.
An error (a value out of range, a missing file) prints one line, ``error: <type>:
<message>``, and exits with 1; ``HYDRA_FULL_ERROR=1`` gives the traceback instead.
"""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from advi_repro.planning.cli import check_choices, fail
from advi_repro.planning.config import register, to_run
from advi_repro.planning.paths import checkout_conf
from advi_repro.runners.interrupt import Interrupted, die_with_parent
from advi_repro.runners.run import execute

CONF = checkout_conf(__file__)  # the conf/ Hydra's config_path names
register(CONF)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """config -> data -> model -> runner -> files."""
    try:
        execute(to_run(cfg), OmegaConf.to_container(cfg, resolve=True))
    except Interrupted as stopped:
        logging.getLogger("fit").warning("%s", stopped)
        sys.exit(stopped.exit_code)
    except Exception as error:
        fail(error)


if __name__ == "__main__":
    die_with_parent()
    check_choices(sys.argv[1:], CONF)
    main()
