"""An experiment's data: simulated from a seed or fetched (sha256-checked), then split.

The workflow makes the data in their own rules (``rules/data.smk``) with these functions;
``scripts/fit.py`` calls :func:`prepare_data` too, which finds them made and only returns
their path, so a run started by hand makes what it lacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import datasets.fetch
import datasets.simulate
import models

from .config import Config
from .files import atomic_open
from .paths import fetched_data_dir, simulated_data_path


def data_path(run: Config) -> Path:
    """The file (simulated) or folder (fetched) that the model's ``load`` reads."""
    data = run.experiment.data
    if data.source == "simulate":
        return simulated_data_path(run.results_dir, data.name, data.seed,
                                   run.experiment_scale().simulate)
    return fetched_data_dir(run.results_dir, data.name)


def simulate(name: str, seed: int, kwargs: dict[str, Any], path: Path) -> Path:
    """Writes ``datasets.simulate.<name>(seed, **kwargs)`` to ``path`` (.npz), atomically."""
    arrays = getattr(datasets.simulate, name)(seed, **kwargs)
    with atomic_open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def fetch(name: str, folder: Path, mirror_dir: str | None) -> Path:
    """``datasets.fetch.fetch``: the checked files of data set ``name`` in ``folder``.

    Args:
        folder: ``<anything>/<name>``, the folder the files go to.
        mirror_dir: a local mirror; None uses ``datasets.fetch``'s default
            (``<repo>/../shared/data`` when it exists, else the upstream URLs).
    """
    if folder.name != name:
        raise ValueError(f"the folder of data set {name!r} must be named {name!r}, got {folder}")
    return Path(datasets.fetch.fetch(name, folder.parent, mirror_dir=mirror_dir))


def prepare_data(run: Config) -> Path:
    """The data path of ``run``, simulating or fetching it first if it is not there."""
    path = data_path(run)
    data = run.experiment.data
    if data.source == "fetch":
        return fetch(data.name, path, run.mirror_dir)  # keeps the files already checked
    if path.exists():
        return path
    return simulate(data.name, data.seed, run.experiment_scale().simulate, path)


def load_problem(run: Config, path: Path) -> models.Problem:
    """The train/held-out split of the data at ``path``, by the experiment's model."""
    module = models.get(run.experiment.model)
    return module.load(path, seed=run.experiment.data.seed, **run.experiment_scale().load)
