"""Run one experiment x method x seed under the timing protocol (Hydra entry point).

    python scripts/fit.py experiment=election88 method=nuts scale=smoke seed=1
    python scripts/fit.py -m experiment=linreg_ard method=advi method.grad_samples=1,10

Writes ``<results_dir>/runs/<experiment>/<method>/seed<k>/{trace.csv,info.json}``;
the options are in ``conf/`` and ``runners/config.py``.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig, OmegaConf

from runners.config import register, to_run
from runners.run import execute

register()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """config -> data -> model -> runner -> files."""
    execute(to_run(cfg), OmegaConf.to_container(cfg, resolve=True))


if __name__ == "__main__":
    main()
