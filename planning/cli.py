"""What ``scripts/fit.py``'s command line adds to Hydra: one-line errors (an unknown
experiment, method or scale included, which Hydra itself reports in a dozen lines), and the
guard that refuses a ``-m`` sweep writing two runs into one folder before any of them runs."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from advi_repro.planning.config import choices
from advi_repro.planning.sweeps import refuse_shared_folders

GROUPS = ("experiment", "method", "scale")
"""The config groups a user picks from on the command line (``conf/<group>/*.yaml``)."""


def fail(error: BaseException) -> NoReturn:
    """Prints ``error: <type>: <message> (HYDRA_FULL_ERROR=1 shows where)`` to stderr (with
    ``HYDRA_FULL_ERROR=1``: the traceback) and exits with 1."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(error)
    else:
        print(f"error: {type(error).__name__}: {error} (HYDRA_FULL_ERROR=1 shows where)",
              file=sys.stderr)
    sys.exit(1)


def check_choices(argv: list[str], conf_dir: str | Path) -> None:
    """Fails (:func:`fail`) on a ``group=name`` argument, ``group`` one of :data:`GROUPS`,
    whose ``name`` (or any name of a ``-m`` sweep's ``a,b``) has no
    ``<conf_dir>/<group>/<name>.yaml`` (``conf_dir``: the Hydra config the script composes),
    naming the value and the valid choices, before Hydra composes anything."""
    for arg in argv:
        group, sep, value = arg.partition("=")
        if not sep or group.lstrip("+~") not in GROUPS:
            continue
        group = group.lstrip("+~")
        for name in value.split(","):
            if not (Path(conf_dir) / group / f"{name}.yaml").is_file():
                fail(ValueError(f"{group}={name!r} is not a choice; {group} is one of: "
                                f"{choices(group, conf_dir)} ({conf_dir}/{group}/*.yaml)"))


class SweepGuard(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/config.yaml``): before a ``-m`` sweep
    runs anything, composes each of its runs and exits with :func:`fail` when two would
    write one folder (:func:`advi_repro.planning.sweeps.refuse_shared_folders`, as the workflow
    refuses), or when any run's config is out of range."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Checks the sweep of ``config.hydra.overrides.task``; Hydra turns a callback's
        exception into a warning, so an error exits here."""
        overrides = OmegaConf.to_container(config.hydra.overrides.task)
        try:
            refuse_shared_folders(overrides, config.hydra.job.config_name)
        except Exception as error:  # noqa: BLE001 - every error ends the sweep, in one line
            fail(error)
