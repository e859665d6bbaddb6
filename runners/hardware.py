"""What a run's seconds were measured on, read from its ``info.json``.

Seconds are comparable between runs only when they ran on the same kind of device with the
same number of cores of the same CPU model; the report shows each run's set-up and the
claims compare seconds only between runs of one set-up.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    return f"{setup}; {cpus}; beside {beside} fit{'s' if beside != 1 else ''}"
