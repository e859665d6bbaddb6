"""How long a planned workflow should take: per run, in core-hours, and on N cores.

A run's *worst case* is the most wall-clock seconds it may take: its whole budget plus the
compilation and scoring its clock leaves out (:func:`wall_clock_limit`, also the SLURM
profile's time limit). Its *estimate* comes from a measured run of the same experiment and
method (``conf/estimates.yaml``, written by ``scripts/plan.py --measure``): a run that
ended on its own before its budget takes the wall-clock seconds it took (``total_s``); one
that stopped for its budget under a different budget takes the planned budget, plus its
scoring at the measured seconds per clock second, plus its measured fixed seconds
(compilation, loading: :meth:`Measured.seconds_for`); under the same budget it takes what
it took (HMC's stop before a transition it cannot finish in time ends it short of its
budget, which no scaling would tell), as it does under any budget that the transition it
stopped before would still pass (a chain's transitions, from its seed, are the same
whatever its budget). A run with no measurement
counts at its worst case. The hours on N cores are those of a list schedule of the runs,
longest first, each on as many cores as it declares (Graham 1969: within 4/3 of the best
schedule), as Snakemake's own scheduler packs them at best.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import yaml

BUDGET_FACTOR = 2.0
"""Wall-clock seconds per second of budget at worst (*choice*): the clock runs only while a
method computes; scoring a checkpoint (S = 1,000 draws from q at paper scale) can cost as
much as the iterations between checkpoints."""

EXTRA_S = 15 * 60.0
"""Seconds on top of every run's worst case (*choice*): start-up, data loading, XLA
compilation (seconds to a minute per function), the last checkpoint past the budget."""

BUDGET_USED = 0.95
"""A measured run whose clock reached this fraction of its budget counts as budget-bound."""


def wall_clock_limit(budget_s: float) -> float:
    """The most wall-clock seconds a run with clock budget ``budget_s`` takes,
    ``BUDGET_FACTOR * budget_s + EXTRA_S``: the plan's worst case and the SLURM time limit."""
    return BUDGET_FACTOR * budget_s + EXTRA_S


class Measured(NamedTuple):
    """A measured run, from its ``info.json``: its clock seconds (``wall_s``), wall-clock
    seconds (``total_s``), budget (``budget_s``), the seconds it spent scoring and writing
    checkpoints (``checkpoint_s``, None if not recorded) and whether it stopped for its
    budget (``budget_bound``: its ``stopped_by_budget``, which also covers HMC's stop
    before a transition that would pass the budget; None if not recorded: then a run whose
    clock reached ``BUDGET_USED`` of its budget counts as budget-bound) and, for that stop,
    the forecast seconds of the transition it stopped before (``next_transition_s``)."""

    wall_s: float
    total_s: float
    budget_s: float
    checkpoint_s: float | None = None
    budget_bound: bool | None = None
    next_transition_s: float | None = None

    def seconds_for(self, budget_s: float) -> float:
        """Its expected wall-clock seconds under budget ``budget_s``: ``total_s`` if it
        ended on its own, ran under this same budget, or stopped before a transition that
        would pass ``budget_s`` too (``wall_s <= budget_s < wall_s + next_transition_s``);
        if it was budget-bound otherwise, the planned budget plus the scoring that grows
        with it (``checkpoint_s`` per clock second) plus its fixed seconds (compilation,
        loading: ``total_s - wall_s - checkpoint_s``), or, where ``checkpoint_s`` is not
        recorded, the budget times ``total_s / wall_s``."""
        bound = (self.wall_s >= BUDGET_USED * self.budget_s if self.budget_bound is None
                 else self.budget_bound)
        stops_the_same = (self.next_transition_s is not None
                          and self.wall_s <= budget_s < self.wall_s + self.next_transition_s)
        if not bound or budget_s == self.budget_s or stops_the_same:
            return self.total_s
        wall_s = max(self.wall_s, 1e-9)
        if self.checkpoint_s is None:
            return budget_s * self.total_s / wall_s
        fixed_s = max(self.total_s - self.wall_s - self.checkpoint_s, 0.0)
        return budget_s * (1.0 + self.checkpoint_s / wall_s) + fixed_s


class RunEstimate(NamedTuple):
    """One planned run: its name (``experiment/method``), cores, budget (seconds), its
    estimate and worst case (wall-clock seconds) and whether the estimate was measured."""

    name: str
    cores: int
    budget_s: float
    estimate_s: float
    worst_s: float
    measured: bool


def read_estimates(path: str | Path) -> dict[str, dict[str, Measured]]:
    """``{experiment: {method run name: Measured}}`` from ``path`` (YAML, the checkout's
    ``conf/estimates.yaml``: measured seconds at paper scale; its ``paper``
    key; each method ``{wall_s, total_s, budget_s}`` and optionally ``checkpoint_s`` and
    ``budget_bound``: :class:`Measured`), empty where the file is missing."""
    path = Path(path)
    if not path.exists():
        return {}
    table = (yaml.safe_load(path.read_text()) or {}).get("paper") or {}
    return {experiment: {m: Measured(**{k: v if k == "budget_bound" or v is None else float(v)
                                        for k, v in run.items()})
                         for m, run in (methods or {}).items()}
            for experiment, methods in table.items()}


def estimate_runs(runs: Iterable[object], typical: Mapping[str, Mapping[str, Measured]]
                  ) -> list[RunEstimate]:
    """:class:`RunEstimate` of each planned run (objects with ``experiment``, ``method``,
    ``cores`` and ``budget_s``, as :class:`advi_repro.planning.workflow.RunJob`)."""
    out = []
    for run in runs:
        worst = wall_clock_limit(run.budget_s)
        measured = typical.get(run.experiment, {}).get(run.method)
        estimate = worst if measured is None else min(measured.seconds_for(run.budget_s), worst)
        out.append(RunEstimate(
            name=f"{run.experiment}/{run.method}", cores=run.cores, budget_s=run.budget_s,
            estimate_s=estimate, worst_s=worst, measured=measured is not None))
    return out


def makespan(jobs: Sequence[tuple[float, int]], cores: int) -> float:
    """Seconds until the last of ``jobs`` (``(seconds, cores)`` each) ends on ``cores``
    cores, longest first, each started as soon as its cores are free (a job asking for more
    than ``cores`` gets ``cores``, as Snakemake scales it down).

    Raises:
        ValueError: ``cores`` < 1.
    """
    if cores < 1:
        raise ValueError(f"cores = {cores}: must be at least 1")
    free = [0.0] * cores  # a heap of the times each core becomes free
    end = 0.0
    for seconds, wanted in sorted(jobs, key=lambda job: -job[0]):
        taken = [heapq.heappop(free) for _ in range(min(wanted, cores))]
        start = max(taken)
        for _ in taken:
            heapq.heappush(free, start + seconds)
        end = max(end, start + seconds)
    return end


def _hours(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:.2g} h" if hours < 10 else f"{hours:.0f} h"


def summary_line(estimates: Sequence[RunEstimate], cores: Sequence[int]) -> str:
    """One line, e.g. ``66 runs: about 19.5 core-hours, about 10 h on 2 cores and 2.1 h on
    16 (worst case, every run using its whole budget: 76 core-hours, 38 h on 2 cores and
    5.2 h on 16)``."""
    def hours_on(field: str) -> tuple[float, str]:
        jobs = [(getattr(e, field), e.cores) for e in estimates]
        core_hours = sum(s * c for s, c in jobs) / 3600
        on = " and ".join(f"{_hours(makespan(jobs, n))} on {n}" for n in cores)
        return core_hours, on

    typical, typical_on = hours_on("estimate_s")
    worst, worst_on = hours_on("worst_s")
    noun = "core" if list(cores) == [1] else "cores"
    return (f"{len(estimates)} runs: about {typical:.3g} core-hours, about {typical_on} "
            f"{noun} (worst case, every run using its whole budget: {worst:.3g} core-hours, "
            f"{worst_on} {noun})")


def plan_table(estimates: Sequence[RunEstimate]) -> str:
    """The runs, one line each: name, cores, budget, estimate (``~`` where measured,
    ``<=`` where only the worst case is known), worst case; same runs of several seeds are
    counted on one line."""
    counts: dict[RunEstimate, int] = {}
    for e in estimates:
        counts[e] = counts.get(e, 0) + 1
    width = max((len(e.name) for e in counts), default=4)
    lines = [f"{'run':<{width}}  seeds  cores  budget_s  estimate   worst"]
    for e, n in counts.items():
        mark = "~" if e.measured else "<="
        lines.append(f"{e.name:<{width}}  {n:>5}  {e.cores:>5}  {e.budget_s:>8.0f}  "
                     f"{mark}{_minutes(e.estimate_s):>7}  {_minutes(e.worst_s):>6}")
    return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return "inf" if math.isinf(seconds) else f"{seconds / 60:.1f}m"


def plan_report(runs: Iterable[object], cores: int,
                typical: Mapping[str, Mapping[str, Measured]]) -> str:
    """What the workflow prints before it runs: :func:`plan_table` and :func:`summary_line`
    on ``cores`` cores (and on 2, 16 and 64 for comparison), from the measured runs
    ``typical`` (:func:`read_estimates`)."""
    estimates = estimate_runs(runs, typical)
    shown = sorted({cores, 2, 16, 64})
    return (f"{plan_table(estimates)}\n{summary_line(estimates, shown)}\n"
            "(~: from a measured run, conf/estimates.yaml; <=: not measured, counted at its "
            f"worst case, {BUDGET_FACTOR:g} x budget + {EXTRA_S / 60:.0f} min)")
