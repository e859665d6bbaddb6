"""Where a run's inputs and outputs live, relative to ``results_dir`` (the working directory's
``results/`` by default). ``scripts/fit.py`` and the workflow's rules both take paths from here.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The checkout the workflow's packages are imported from (its code version is a run's:
:func:`advi_repro.planning.rerun.code_version`). Never a source of config: with one
installation and two checkouts it is the other checkout's (:func:`checkout_conf`)."""


def checkout_conf(entry_point: str | os.PathLike) -> Path:
    """The Hydra config of the checkout that holds ``entry_point``, a file one folder below
    its root (``scripts/fit.py``, ``benchmarks/bench_peers.py``): the ``conf/`` beside that
    folder, which ``@hydra.main(config_path="../conf")`` composes too.

    Every entry point reads the ``conf/`` of the checkout it runs in (the Snakefile: the one
    beside it) and hands it down; the packages never look for one of their own, so a second
    checkout's new experiment runs with the first checkout's installation.

    Raises:
        FileNotFoundError: that folder holds no ``config.yaml``, naming the folder.
    """
    conf = Path(entry_point).resolve().parents[1] / "conf"
    if not (conf / "config.yaml").is_file():
        raise FileNotFoundError(f"{conf} holds no config.yaml: {Path(entry_point).name} "
                                "runs from the scripts/ (or benchmarks/) of a checkout")
    return conf


def run_dir(
    results_dir: str | Path, scale: str, experiment: str, method: str, seed: int | str
) -> Path:
    """``<results_dir>/runs/<scale>/<experiment>/<method>/seed<k>``: trace.csv and info.json.

    The scale is part of the path, so a smoke run never lands where a paper-scale run of the
    same experiment, method and seed lives, and a paper-scale workflow never adopts it.
    """
    return Path(results_dir) / "runs" / scale / experiment / method / f"seed{seed}"


def simulated_data_dir(results_dir: str | Path, name: str) -> Path:
    """``<results_dir>/data/simulated/<name>``: the simulations of one simulator."""
    return Path(results_dir) / "data" / "simulated" / name


def simulated_data_path(
    results_dir: str | Path, name: str, seed: int, kwargs: dict[str, Any]
) -> Path:
    """``<simulated_data_dir>/seed<k>_<key><value>...npz``: one file per simulation.

    The simulator's keyword arguments (sizes) are in the name, so changing a size makes a
    new file rather than reusing a stale one.
    """
    sizes = "".join(f"_{key}{kwargs[key]}" for key in sorted(kwargs))
    return simulated_data_dir(results_dir, name) / f"seed{seed}{sizes}.npz"


def fetched_data_dir(results_dir: str | Path, name: str) -> Path:
    """``<results_dir>/data/fetched/<name>``: the checked copy of a real data set."""
    return Path(results_dir) / "data" / "fetched" / name


def imageclef_data_dir(results_dir: str | Path) -> Path:
    """``<results_dir>/data/imageclef``: the colour histograms of E5 and E6 (.npy)."""
    return Path(results_dir) / "data" / "imageclef"


def imageclef_data_path(
    results_dir: str | Path,
    *,
    simulator: str,
    seed: int,
    kwargs: dict[str, Any],
    image_dir: str | os.PathLike | None,
    num_heldout: int,
) -> Path:
    """The .npy of the E5/E6 histograms, one file per data set, shared by the experiments.

    - simulated stand-in: ``<simulator>_seed<k>_<key><value>....npy`` (sizes in the name,
      as :func:`simulated_data_path`);
    - real images: ``images_<folder name>_<hash>_heldout<n>.npy``, where the hash is of the
      folder's absolute path and n is the number of held-out rows, whose exclusion from the
      standardisation statistics makes the file depend on it.
    """
    folder = imageclef_data_dir(results_dir)
    if image_dir is None:
        sizes = "".join(f"_{key}{kwargs[key]}" for key in sorted(kwargs))
        return folder / f"{simulator}_seed{seed}{sizes}.npy"
    absolute = Path(image_dir).expanduser().resolve()
    digest = hashlib.sha256(str(absolute).encode()).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", absolute.name) or "root"
    return folder / f"images_{name}_{digest}_heldout{num_heldout}.npy"
