"""The plan's estimate: list schedules on N cores, measured seconds against budgets."""

from typing import NamedTuple

import pytest

from advi_repro.planning.estimate import (
    Measured,
    estimate_runs,
    makespan,
    plan_table,
    read_estimates,
    summary_line,
    wall_clock_limit,
)
from advi_repro.planning.paths import checkout_conf


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
    measured = {"nuts": Measured(wall_s=110.0, total_s=130.0, budget_s=600.0),
                "slow": Measured(wall_s=600.0, total_s=900.0, budget_s=600.0)}
    fast, unknown, capped = estimate_runs(runs, {"e1": measured})
    assert fast.measured and fast.estimate_s == 130.0 < fast.worst_s  # ended on its own
    assert estimate_runs([Run("e1", "slow", 1, 1200.0)], {"e1": measured})[0].estimate_s == (
        1800.0)  # used its whole budget: the planned budget at its measured overhead
    assert not unknown.measured and unknown.estimate_s == unknown.worst_s
    assert capped.estimate_s == 150.0 < capped.worst_s == wall_clock_limit(100.0)
    assert wall_clock_limit(1800.0) > 1800.0


def test_a_budget_bound_run_scales_its_scoring_but_not_its_compilation():
    # 100 s compiling, 200 s of clock, 50 s scoring: at a budget of 1,000 s the clock runs
    # 1,000 s, scoring grows with it (250 s) and compilation stays 100 s
    hmc = Measured(wall_s=200.0, total_s=350.0, budget_s=900.0, checkpoint_s=50.0,
                   budget_bound=True)  # HMC's stop before a transition past the budget
    assert hmc.seconds_for(1000.0) == pytest.approx(1000.0 + 250.0 + 100.0)
    assert Measured(200.0, 350.0, 900.0, 50.0, budget_bound=False).seconds_for(1000.0) == 350.0
    assert Measured(200.0, 350.0, 900.0).seconds_for(1000.0) == 350.0  # clock < 95% budget


def test_a_budget_bound_run_under_the_planned_budget_counts_at_what_it_took():
    # HMC at a 3,600 s budget that stopped at 1,900 s of clock, before a transition it
    # could not finish in time: the same budget again ends the same way, not at 3,600 s
    hmc = Measured(wall_s=1900.0, total_s=2000.0, budget_s=3600.0, checkpoint_s=20.0,
                   budget_bound=True)
    assert hmc.seconds_for(3600.0) == 2000.0
    assert hmc.seconds_for(1800.0) == pytest.approx(1800.0 * (1 + 20.0 / 1900.0) + 80.0)


def test_hmc_stopped_before_a_transition_past_a_larger_budget_too_counts_at_what_it_took():
    # 290 s of clock, then a transition forecast at 3,900 s: under 600 s or 3,600 s it
    # stops at the same transition; under 7,200 s it would run on
    hmc = Measured(wall_s=290.0, total_s=300.0, budget_s=600.0, checkpoint_s=5.0,
                   budget_bound=True, next_transition_s=3900.0)
    assert hmc.seconds_for(3600.0) == 300.0
    assert hmc.seconds_for(7200.0) == pytest.approx(7200.0 * (1 + 5.0 / 290.0) + 5.0)
    # under 200 s it stops earlier than it did: the budget scales as for any other run
    assert hmc.seconds_for(200.0) == pytest.approx(200.0 * (1 + 5.0 / 290.0) + 5.0)


def test_the_summary_gives_core_hours_and_hours_on_each_core_count():
    runs = [Run("e", f"m{i}", 1, 3600.0) for i in range(4)]
    estimates = estimate_runs(runs, {})
    line = summary_line(estimates, [2, 4])
    hours = wall_clock_limit(3600.0) / 3600
    assert line.startswith(f"4 runs: about {4 * hours:.3g} core-hours, about "
                           f"{2 * hours:.2g} h on 2 and {hours:.2g} h on 4 cores")
    assert "worst case" in line
    assert "e/m0" in plan_table(estimates)


def test_estimates_are_read_from_yaml(tmp_path):
    path = tmp_path / "estimates.yaml"
    path.write_text("paper:\n  linreg_ard:\n    nuts: {wall_s: 110, total_s: 130, "
                    "budget_s: 600}\n")
    assert read_estimates(path) == {"linreg_ard": {"nuts": Measured(110.0, 130.0, 600.0)}}
    assert read_estimates(tmp_path / "missing.yaml") == {}
    committed = checkout_conf(__file__) / "estimates.yaml"
    for methods in read_estimates(committed).values():  # the committed file parses
        assert all(m.total_s >= m.wall_s > 0 for m in methods.values())


def test_measured_runs_are_read_from_a_results_folder(tmp_path):
    import json
    import sys

    from advi_repro.planning.paths import REPO_ROOT
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    import plan

    def run(method, seed, total_s, status="finished", **recorded):
        folder = tmp_path / "runs" / "paper" / "e1" / method / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "info.json").write_text(json.dumps({
            "experiment": "e1", "method": method, "status": status, "wall_s": total_s / 2,
            "total_s": total_s, "budget_s": 600.0, "checkpoint_s": 1.0,
            "stopped_by_budget": False, "next_transition_s": None, **recorded}))

    for seed, total in enumerate([30.0, 10.0, 20.0]):
        run("nuts", seed, total)
    run("hmc", 0, 5.0)
    run("advi_M1", 0, 7.0, status="stopped early: KeyboardInterrupt")
    run("hmc_forecast", 0, 8.0, stopped_by_budget=True, next_transition_s=3900.0)
    table = plan.measured(tmp_path, skip=("hmc",))["paper"]
    assert table == {"e1": {
        "nuts": {"wall_s": 10.0, "total_s": 20.0, "budget_s": 600.0, "checkpoint_s": 1.0,
                 "budget_bound": False},
        "hmc_forecast": {"wall_s": 4.0, "total_s": 8.0, "budget_s": 600.0, "checkpoint_s": 1.0,
                         "next_transition_s": 3900.0, "budget_bound": True}}}
