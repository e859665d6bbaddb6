"""An experiment's data: simulated from a seed, fetched (sha256-checked) or computed from
images, then split.

The workflow makes the data in their own rules (``rules/data.smk``) with these functions,
and its fit rule hands each job its data file (``input_data``); only a run started by hand
(``scripts/fit.py`` without ``input_data``) calls :func:`prepare_data`, which finds the data
made and only returns their path, or makes what it lacks.

Sources (``experiment.data.source``):

- ``simulate``: the model module's ``simulate(seed, **simulate)`` (``advi_repro.models``)
  saved as an .npz, named after ``data.name``;
- ``fetch``: the checked files of a real data set, in a folder (``data.file`` names the one
  the model reads, if it reads one file);
- ``file``: a CSV or .npy file of your own (``data.path``), not copied: the runs read it
  where it is, split by :func:`advi_repro.planning.datasets.own.split_file`;
- ``imageclef``: the (N, 576) float32 colour histograms of E5 and E6 as an .npy, the rows
  before the last ``n_heldout`` for training. By default a simulated stand-in,
  ``advi_repro.planning.datasets.simulate.<name>(seed, **simulate, out_path=...)`` (the imageCLEF
  features are
  not redistributable): ``image_standin``, the histograms of procedural images, or
  ``gmm_standin``, rows of a Gaussian mixture; with ``data.image_dir`` the RGB histograms of the
  images in that folder (``advi_repro.planning.datasets.images``), standardised with the mean and
  sd of the
  training rows. Both E5 and E6 read the same file (``np.load(mmap_mode="r")`` in
  ``models.gmm.load``), which is never copied per run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from advi_repro import models
from advi_repro.planning.config import Config
from advi_repro.planning.datasets import fetch as fetching
from advi_repro.planning.datasets import images, own
from advi_repro.planning.datasets import simulate as standins
from advi_repro.planning.files import atomic_open
from advi_repro.planning.paths import fetched_data_dir, imageclef_data_path, simulated_data_path

STANDINS = {
    "image_standin": ("the standardised RGB histograms of procedural colour images, computed "
                      "as a real image's are"),
    "gmm_standin": "rows drawn from a diagonal Gaussian mixture (the model being fitted)",
}
"""What each imageCLEF stand-in of ``advi_repro.planning.datasets.simulate`` is, for the
captions."""


def heldout_rows(run: Config) -> int:
    """n_heldout of an ``imageclef`` experiment at the run's scale (its ``load`` sizes).

    Raises:
        KeyError: the experiment's ``load`` sizes lack ``n_heldout``.
    """
    load = run.experiment_scale().load
    if "n_heldout" not in load:
        raise KeyError(f"experiment {run.experiment.name!r}: scales.{run.scale.name}.load "
                       f"needs n_heldout for data.source=imageclef, got {dict(load)}")
    return int(load["n_heldout"])


def data_path(run: Config) -> Path:
    """The file (simulated, imageclef) or folder (fetched) that the data rules make, or your
    own file (``data.path``)."""
    data = run.experiment.data
    if data.source == "file":
        return Path(data.path)
    if data.source == "simulate":
        return simulated_data_path(run.results_dir, data.name, data.seed,
                                   run.experiment_scale().simulate)
    if data.source == "imageclef":
        return imageclef_data_path(
            run.results_dir, simulator=data.name, seed=data.seed,
            kwargs=run.experiment_scale().simulate, image_dir=run.data.image_dir,
            num_heldout=heldout_rows(run),
        )
    return fetched_data_dir(run.results_dir, data.name)


def describe_data(run: Config) -> str:
    """One sentence on where the run's data come from, for the report's captions."""
    data = run.experiment.data
    if data.source == "imageclef":
        if run.data.image_dir is not None:
            return (f"Data: real images, the standardised 576-dimensional RGB histograms of "
                    f"the images in {run.data.image_dir} (data.image_dir).")
        sizes = ", ".join(f"{k} = {v}" for k, v in sorted(run.experiment_scale().simulate.items()))
        what = STANDINS.get(data.name, "simulated rows")
        return (f"Data: a simulated stand-in for the imageCLEF colour histograms, {what} "
                f"(advi_repro.planning.datasets.simulate.{data.name}, seed {data.seed}, {sizes}), "
                "since the "
                f"paper's features are not redistributable; data.image_dir=... runs the same "
                f"experiment on real images.")
    if data.source == "file":
        return f"Data: the file {data.path} (data.path), its rows split at random."
    if data.source == "simulate":
        return (f"Data: simulated (advi_repro.models.{run.experiment.model}.simulate, "
                f"seed {data.seed}).")
    return f"Data: {data.name} (fetched, sha256-checked)."


def simulate(model: str, seed: int, kwargs: dict[str, Any], path: Path) -> Path:
    """Writes ``advi_repro.models.<model>.simulate(seed, **kwargs)`` to ``path`` (.npz),
    atomically.

    Raises:
        ValueError: the model is unknown or has no ``simulate``.
    """
    arrays = models.simulator(model)(seed, **kwargs)
    with atomic_open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def imageclef_features(
    path: str | os.PathLike,
    *,
    simulator: str,
    seed: int,
    kwargs: dict[str, Any],
    image_dir: str | os.PathLike | None,
    num_heldout: int,
) -> Path:
    """Writes the E5/E6 histograms to ``path`` (.npy, (N, D) float32), atomically.

    Args:
        path: the .npy file.
        simulator: ``advi_repro.planning.datasets.simulate.<simulator>(seed, **kwargs,
        out_path=path)`` makes
            the stand-in when ``image_dir`` is None.
        seed: the simulation's seed; with images, the seed of their dequantisation noise
            (``advi_repro.planning.datasets.images.dequantisation_rng``).
        kwargs: the simulator's sizes (num_train, num_heldout, dim, ...).
        image_dir: a folder of images, or None for the stand-in.
        num_heldout: with images: the last ``num_heldout`` images are held out, and the mean
            and sd that standardise every row are those of the images before them.

    Raises:
        ValueError: the folder holds no image, or too few to leave two training rows.
    """
    path = Path(path)
    if image_dir is None:
        return Path(standin(simulator)(seed, **kwargs, out_path=path))
    features = images.rgb_histograms(
        image_dir, rng=images.dequantisation_rng(seed))
    num_train = features.shape[0] - num_heldout
    if num_train < 2:
        raise ValueError(
            f"data.image_dir={image_dir} holds {features.shape[0]} images: need at least "
            f"n_heldout + 2 = {num_heldout + 2} (set experiment.scales.<scale>.load.n_heldout)"
        )
    standardised = images.standardise(features, num_train=num_train)
    with atomic_open(path, "wb") as f:
        np.save(f, standardised)
    return path


def standin(name: str) -> Any:
    """The imageCLEF stand-in ``advi_repro.planning.datasets.simulate.<name>`` (:data:`STANDINS`).

    Raises:
        ValueError: ``name`` is not a stand-in; the message lists them.
    """
    if name not in STANDINS:
        raise ValueError(f"data.name={name!r} is not an imageCLEF stand-in; valid: "
                         f"{', '.join(STANDINS)} (or data.image_dir for real images)")
    return getattr(standins, name)


def fetch(name: str, folder: Path, mirror_dir: str | None) -> Path:
    """``advi_repro.planning.datasets.fetch.fetch``: the checked files of data set ``name`` in
    ``folder``.

    Args:
        folder: ``<anything>/<name>``, the folder the files go to.
        mirror_dir: a local mirror; None uses ``advi_repro.planning.datasets.fetch``'s default
            (``<repo>/../shared/data`` when it exists, else the upstream URLs).
    """
    if folder.name != name:
        raise ValueError(f"the folder of data set {name!r} must be named {name!r}, got {folder}")
    return Path(fetching.fetch(name, folder.parent, mirror_dir=mirror_dir))


def prepare_data(run: Config) -> Path:
    """The data path of ``run``, simulating, fetching or computing it first if it is not
    there."""
    path = data_path(run)
    data = run.experiment.data
    if data.source == "file" and not path.is_file():
        raise FileNotFoundError(f"data.path {path} does not exist or is not a file")
    if data.source == "fetch":
        return fetch(data.name, path, run.mirror_dir)  # keeps the files already checked
    if path.exists():
        return path
    if data.source == "imageclef":
        return imageclef_features(
            path, simulator=data.name, seed=data.seed, kwargs=run.experiment_scale().simulate,
            image_dir=run.data.image_dir, num_heldout=heldout_rows(run),
        )
    return simulate(run.experiment.model, data.seed, run.experiment_scale().simulate, path)


def load_problem(run: Config, path: Path) -> models.Problem:
    """The train/held-out split of the data at ``path`` (``path / data.file`` when the
    experiment names a file of a fetched data set), by the experiment's model; your own file
    (``data.source: file``) by :func:`advi_repro.planning.datasets.own.split_file`."""
    data, sizes = run.experiment.data, run.experiment_scale().load
    if data.source == "file":
        return own.split_file(path, seed=data.seed, **sizes)
    module = models.get(run.experiment.model)
    if data.file is not None:
        path = path / data.file
    return module.load(path, seed=data.seed, **sizes)
