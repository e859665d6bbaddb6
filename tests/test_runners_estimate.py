"""The plan's estimate: list schedules on N cores, measured seconds against budgets."""

from typing import NamedTuple

import pytest

from runners.estimate import (
    estimate_runs,
    makespan,
    plan_table,
    read_estimates,
    summary_line,
    wall_clock_limit,
)


class Run(NamedTuple):
    experiment: str
    method: str
    cores: int
    budget_s: float


def test_a_list_schedule_packs_the_longest_first():
    assert makespan([(3, 1), (2, 1), (1, 1)], 2) == 3
    assert makespan([(3, 1), (2, 1), (1, 1)], 1) == 6
    assert makespan([(1, 2), (1, 1), (1, 1)], 2) == 2
    assert makespan([(5, 8)], 2) == 5  # a job asking for more cores than there are gets all
    assert makespan([], 4) == 0
    with pytest.raises(ValueError, match="cores = 0"):
        makespan([(1, 1)], 0)


def test_measured_runs_count_at_their_seconds_and_the_rest_at_their_budget():
    runs = [Run("e1", "nuts", 1, 1800.0), Run("e1", "hmc", 1, 1800.0),
            Run("e1", "slow", 2, 100.0)]
    fast, unknown, capped = estimate_runs(runs, {"e1": {"nuts": 110.0, "slow": 5000.0}})
    assert fast.measured and fast.estimate_s == 110.0 < fast.worst_s
    assert not unknown.measured and unknown.estimate_s == unknown.worst_s
    assert capped.estimate_s == capped.worst_s == wall_clock_limit(100.0)
    assert wall_clock_limit(1800.0) > 1800.0


def test_the_summary_gives_core_hours_and_hours_on_each_core_count():
    runs = [Run("e", f"m{i}", 1, 3600.0) for i in range(4)]
    estimates = estimate_runs(runs, {})
    line = summary_line(estimates, [2, 4])
    hours = wall_clock_limit(3600.0) / 3600
    assert line.startswith(f"4 runs: about {4 * hours:.3g} core-hours, about "
                           f"{2 * hours:.2g} h on 2 and {hours:.2g} h on 4 cores")
    assert "worst case" in line
    assert "e/m0" in plan_table(estimates)


def test_the_committed_estimates_name_planned_runs():
    table = read_estimates()
    assert table["linreg_ard"]["nuts"] > 0
    assert read_estimates("/nonexistent.yaml") == {}
