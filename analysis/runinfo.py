"""What the report reads from runs' ``info.json``: what each run's seconds were measured
on, and an experiment's model and data.

Seconds are comparable between runs only when they ran on the same kind of device with the
same number of cores of the same CPU model; the report shows each run's set-up and the
claims compare seconds only between runs of one set-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def timing_setup(info: Mapping[str, Any]) -> str | None:
    """A run's timing set-up, e.g. ``cpu x1 (Intel(R) Xeon(R) ...)`` or ``gpu NVIDIA H100
    80GB HBM3 (host: 1 x Intel ...)``; None for a run that did not record it (made before
    ``resources`` was recorded)."""
    resources = info.get("resources")
    device = (info.get("environment") or {}).get("device") or {}
    if not resources or not device:
        return None
    cpu = f"{resources['cores']} x {resources['cpu_model']}"
    if device.get("platform") == "cpu":
        return f"cpu, {cpu}"
    return f"{device.get('platform')} {device.get('kind')} (host: {cpu})"


def describe_resources(info: Mapping[str, Any]) -> str:
    """One line for the report's Runs page: set-up, CPU ids, how they were pinned and how
    many fits ran beside it, e.g. ``cpu, 1 x Intel ...; CPUs 3 (slot); beside 1 fit``."""
    resources = info.get("resources")
    setup = timing_setup(info)
    if not resources or setup is None:
        return "not recorded"
    ids = resources.get("cpu_ids")
    cpus = "not pinned" if ids is None else (
        f"CPUs {', '.join(str(i) for i in ids)} ({resources['pinned_by']})")
    beside = resources.get("beside", 0)
    load = resources.get("max_load")
    busy = f"; load up to {load:g}" if load is not None else ""
    return f"{setup}; {cpus}; beside {beside} fit{'s' if beside != 1 else ''}{busy}"


def experiment_facts(infos: Sequence[Mapping[str, Any]]) -> tuple[str, bool, str]:
    """An experiment's model, whether it is minibatched, and its data's origin, from the
    ``info.json`` of its runs (``config`` is the run's resolved Hydra config).

    The data of the image mixture (E5, E6: ``experiment.data.source`` ``imageclef``) are a
    simulated stand-in unless the run-wide ``data.image_dir`` named a folder of real images.

    Raises:
        ValueError: no runs, or runs that disagree on the model.
    """
    if not infos:
        raise ValueError("an experiment needs at least one run's info.json")
    models = {info["config"]["experiment"]["model"] for info in infos}
    if len(models) != 1:
        raise ValueError(f"runs of one experiment fit different models: {sorted(models)}")
    model = models.pop()
    minibatched = any((info["config"].get("method") or {}).get("minibatch_size") is not None
                      for info in infos)
    config = infos[0]["config"]
    data = config["experiment"].get("data") or {}
    image_dir = (config.get("data") or {}).get("image_dir")
    if data.get("source") == "imageclef" or model == "gmm":
        origin = (f"real images from {image_dir}" if image_dir else
                  "simulated stand-in for the imageCLEF histograms "
                  "(advi_repro.planning.datasets.simulate."
                  f"{data.get('name')}; no data.image_dir given)")
    else:
        origin = f"{data.get('source', '')} {data.get('name', '')}".strip()
    return model, minibatched, origin
