"""A fit's share of the machine: the CPUs it is pinned to, and what else ran beside it.

Fits run side by side (``snakemake --cores N`` starts as many as their declared ``cores``
allow). Each keeps to its own CPUs, so that one fit's seconds do not depend on what runs
beside it:

- on one machine, a fit takes ``cores`` free CPUs of those it may use
  (``os.sched_getaffinity(0)``) under an exclusive lock on a slot file
  ``<results_dir>/.cpu_slots/<host>.json`` that lists the CPUs each live fit holds, and pins
  itself to them (``os.sched_setaffinity``) before JAX starts its backend, so XLA's and
  Eigen's thread pools are sized to the share (both size themselves from the affinity mask);
  the file is per host, so fits on different nodes sharing one results folder never pin
  each other; a fit whose process has died no longer holds its CPUs;
- under SLURM (``SLURM_JOB_ID`` set) the job's own CPU set is already its share when SLURM
  confined it (no more CPUs than ``cores``): the fit keeps it and takes no slot; where the
  cluster does not confine jobs (``TaskPlugin=task/none``), it takes a slot as above;
- where the OS has no affinity calls (macOS), nothing is pinned and the share says so.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from advi_repro.planning.files import process_alive

SLOTS_DIR = ".cpu_slots"
"""The folder, under ``results_dir``, of the per-host slot files."""


@dataclass
class CpuShare:
    """The CPUs a fit ran on.

    Attributes:
        cores: how many CPUs it used.
        cpu_ids: their ids (sorted), or None where the OS has no affinity calls.
        pinned_by: ``"slot"`` (a slot taken in the results folder), ``"slurm"`` (the job's
            own CPU set) or ``"none"`` (not pinned).
        beside: how many other fits held CPUs on this host beside it: the most seen at
            its start and at each :meth:`recount`.
        host: the host's name.
        cpu_model: the CPU's model name (``/proc/cpuinfo``, else ``platform.processor()``).
        max_load: the host's highest 1-minute load average seen at its start and at each
            :meth:`recount` (``os.getloadavg``; None where the OS has none): above the
            host's CPU count, other work competed with the fits and their seconds are slow.
    """

    cores: int
    cpu_ids: tuple[int, ...] | None
    pinned_by: str
    beside: int
    host: str
    cpu_model: str
    max_load: float | None = None

    def __post_init__(self) -> None:
        self.max_load = _load()

    def recount(self, results_dir: str | os.PathLike) -> dict[str, Any]:
        """Updates ``beside`` with the fits that hold CPUs on this host now (slot shares
        only) and returns the share as plain JSON values (``info.json``'s ``resources``)."""
        load = _load()
        if load is not None:
            self.max_load = max(load, self.max_load or 0.0)
        if self.pinned_by == "slot":
            with _locked_slots(_slots_file(results_dir, self.host)) as held:
                others = len(held) - (str(os.getpid()) in held)
            self.beside = max(self.beside, others)
        out = asdict(self)
        out["cpu_ids"] = None if self.cpu_ids is None else list(self.cpu_ids)
        return out


def cpu_model() -> str:
    """The CPU's model name, e.g. ``Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz``; from
    ``/proc/cpuinfo`` on Linux, else ``platform.processor()``, else ``"unknown"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _slots_file(results_dir: str | os.PathLike, host: str) -> Path:
    return Path(results_dir) / SLOTS_DIR / f"{host}.json"


@contextmanager
def _locked_slots(path: Path) -> Iterator[dict[str, list[int]]]:
    """The slot file's ``{pid: cpu ids}`` of live fits, under an exclusive lock; what the
    caller leaves in the dict is written back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            held = json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            held = {}
        held = {pid: cpus for pid, cpus in held.items() if process_alive(int(pid))}
        yield held
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(held))
        os.replace(tmp, path)


def choose_cpus(usable: set[int], held: dict[str, list[int]], cores: int) -> list[int]:
    """``cores`` CPUs of ``usable``: free ones first (lowest ids), then, when too few are
    free (more fits than CPUs, e.g. a fit started by hand beside the workflow), the least
    shared ones.

    Raises:
        ValueError: ``cores`` < 1 or more than the ``usable`` CPUs.
    """
    if not 1 <= cores <= len(usable):
        raise ValueError(f"cores = {cores}: a fit may use 1 to {len(usable)} CPUs here "
                         f"(those this process may run on: {sorted(usable)})")
    load = {cpu: 0 for cpu in usable}
    for cpus in held.values():
        for cpu in cpus:
            if cpu in load:
                load[cpu] += 1
    return sorted(sorted(usable, key=lambda cpu: (load[cpu], cpu))[:cores])


def _has_affinity() -> bool:
    return hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")


@contextmanager
def cpu_share(cores: int, results_dir: str | os.PathLike, *,
              environ: dict[str, str] | None = None,
              set_affinity: Callable[[int, set[int]], None] | None = None) -> Iterator[CpuShare]:
    """Takes and pins this process's share of CPUs for the duration of the block, and gives
    the process its CPUs back after it; call it before the process's first JAX computation
    (XLA sizes its thread pool then).

    Args:
        cores: CPUs the fit uses (``cores`` of the run's config).
        results_dir: the results folder, whose ``.cpu_slots/<host>.json`` records the
            shares of the fits running on this host.
        environ: the environment to read ``SLURM_JOB_ID`` from (default ``os.environ``).
        set_affinity: ``os.sched_setaffinity`` (injectable for tests).

    Yields:
        The :class:`CpuShare`.

    Raises:
        ValueError: ``cores`` < 1, or more CPUs than this process may use.
    """
    environ = os.environ if environ is None else environ
    host, model = socket.gethostname(), cpu_model()
    if not _has_affinity():
        yield CpuShare(cores, None, "none", 0, host, model)
        return
    usable = set(os.sched_getaffinity(0))
    if "SLURM_JOB_ID" in environ and len(usable) <= cores:
        yield CpuShare(len(usable), tuple(sorted(usable)), "slurm", 0, host, model)
        return
    set_affinity = set_affinity or os.sched_setaffinity
    slots = _slots_file(results_dir, host)
    me = str(os.getpid())
    with _locked_slots(slots) as held:
        cpus = choose_cpus(usable, held, cores)
        beside = len(held)
        held[me] = cpus
    set_affinity(0, set(cpus))
    share = CpuShare(cores, tuple(cpus), "slot", beside, host, model)
    try:
        yield share
    finally:
        # the process gets its CPUs back: a caller that runs on (a test's worker, a script
        # running several fits) and its children are not left pinned to this share
        set_affinity(0, usable)
        with _locked_slots(slots) as held:
            held.pop(me, None)
