"""Tables from traces: mean curves over seeds and the per-method summary."""

import json

import numpy as np
import pytest

from advi_repro.analysis.summary import (
    mean_curves,
    method_order,
    read_endings,
    read_traces,
    run_ending,
    seed_summaries,
    summary_table,
)
from advi_repro.runners.trace import TraceWriter


def _write(runs_dir, method, label, seed, rows):
    trace = TraceWriter(runs_dir / method / f"seed{seed}" / "trace.csv",
                        identity={"experiment": "e", "method": method, "label": label,
                                  "seed": seed})
    for iteration, wall_s, lpd in rows:
        trace.append(iteration=iteration, wall_s=wall_s, heldout_lpd=lpd, num_draws=10)
    return trace.path


@pytest.fixture
def trace_paths(tmp_path):
    return [
        _write(tmp_path, "nuts", "NUTS", 0, [(50, 1.0, -2.0), (100, 2.0, -1.0)]),
        _write(tmp_path, "nuts", "NUTS", 1, [(50, 3.0, -2.2), (100, 4.0, -1.2)]),
        _write(tmp_path, "advi_M1", "ADVI (M=1)", 0, [(100, 0.1, -1.5), (200, 0.2, -1.105)]),
        _write(tmp_path, "advi_M1", "ADVI (M=1)", 1, [(100, 0.3, -1.3), (200, 0.4, -1.095)]),
        _write(tmp_path, "hmc", "HMC", 0, [(50, 5.0, -3.0)]),
    ]


@pytest.fixture
def traces(trace_paths):
    return read_traces(trace_paths)


def test_read_traces_stacks_the_given_runs(traces):
    assert len(traces) == 9 and set(traces["method"]) == {"nuts", "advi_M1", "hmc"}


def test_read_traces_reads_only_the_given_files(tmp_path, trace_paths):
    _write(tmp_path, "nuts", "NUTS", 7, [(50, 1.0, -9.0)])  # a stray run of another config
    traces = read_traces(trace_paths[:2])
    assert set(traces["seed"]) == {0, 1} and set(traces["method"]) == {"nuts"}


def test_read_traces_fails_clearly_without_runs(tmp_path):
    with pytest.raises(ValueError, match="no traces given"):
        read_traces([])
    with pytest.raises(FileNotFoundError, match="seed3"):
        read_traces([tmp_path / "nuts" / "seed3" / "trace.csv"])


def test_methods_follow_the_preferred_order_then_the_name(traces):
    assert method_order(traces, ["nuts", "missing"]) == ["nuts", "advi_M1", "hmc"]


def test_mean_curves_average_seeds_at_each_checkpoint(traces):
    nuts = mean_curves(traces).query("method == 'nuts'")
    assert list(nuts["iteration"]) == [50, 100]
    assert list(nuts["wall_s"]) == [2.0, 3.0]
    np.testing.assert_allclose(nuts["heldout_lpd"], [-2.1, -1.1])
    np.testing.assert_allclose(nuts["lpd_min"], [-2.2, -1.2])
    assert list(nuts["runs"]) == [2, 2]


def test_summary_times_each_method_against_the_reference(traces):
    table = summary_table(traces, reference="nuts", tolerance=0.01,
                          preferred=["advi_M1", "nuts", "hmc"]).set_index("method")
    assert list(table.index) == ["advi_M1", "nuts", "hmc"]
    assert table.loc["nuts", "final_heldout_lpd"] == pytest.approx(-1.1)
    assert table.loc["advi_M1", "final_heldout_lpd_sd"] == pytest.approx(np.std([-1.105, -1.095],
                                                                                 ddof=1))
    # target -1.1 - 0.011 = -1.111: ADVI's mean curve (-1.4, -1.1) gets there at 0.3 s.
    assert table.loc["advi_M1", "seconds_to_1pct_of_nuts"] == pytest.approx(0.3)
    assert table.loc["nuts", "seconds_to_1pct_of_nuts"] == pytest.approx(3.0)
    assert np.isnan(table.loc["hmc", "seconds_to_1pct_of_nuts"])
    assert np.isnan(table.loc["hmc", "final_heldout_lpd_sd"])


def test_each_seed_is_timed_against_its_own_reference_run(traces):
    """Seed 0: NUTS ends at -1.0 (target -1.01), which ADVI (-1.105) never reaches; seed 1:
    NUTS ends at -1.2 (target -1.212), which ADVI reaches at 0.4 s. The summary's spread of
    the seconds is over the seeds that came within it: NUTS's own 2 and 4 s."""
    per_seed = seed_summaries(traces, reference="nuts", preferred=["advi_M1", "nuts", "hmc"])
    assert list(per_seed.columns[:2]) == ["seed", "method"]
    at = per_seed.set_index(["seed", "method"])["seconds_to_1pct_of_nuts"]
    assert np.isnan(at[0, "advi_M1"]) and at[1, "advi_M1"] == pytest.approx(0.4)
    assert at[0, "nuts"] == pytest.approx(2.0) and at[1, "nuts"] == pytest.approx(4.0)
    assert set(per_seed.loc[per_seed["seed"] == 1, "method"]) == {"advi_M1", "nuts"}
    spread = summary_table(traces, reference="nuts").set_index("method")[
        "seconds_to_1pct_of_nuts_sd"]
    assert spread["nuts"] == pytest.approx(np.std([2.0, 4.0], ddof=1))
    assert np.isnan(spread["advi_M1"]) and np.isnan(spread["hmc"])


def test_the_summary_reads_the_race_the_other_way_round(tmp_path, trace_paths):
    above = _write(tmp_path, "advi_robust_M1", "ADVI robust (M=1)", 0,
                   [(100, 0.5, -0.8), (200, 1.0, -0.5)])
    table = summary_table(read_traces([*trace_paths, above]), reference="nuts",
                          tolerance=0.01).set_index("method")
    column = "seconds_for_nuts_to_1pct_of_final"
    # NUTS's mean curve: -2.1 at 2 s, -1.1 at 3 s
    assert table.loc["advi_M1", column] == pytest.approx(3.0)  # within 1% of -1.1: -1.111
    assert table.loc["hmc", column] == pytest.approx(2.0)  # within 1% of -3.0: -3.03
    assert table.loc["nuts", column] == pytest.approx(3.0)  # its own final value
    assert np.isnan(table.loc["advi_robust_M1", column])  # -0.5: NUTS never got there
    assert table.loc["advi_robust_M1", "seconds_to_1pct_of_nuts"] == pytest.approx(0.5)


def test_summary_without_the_reference_method_has_no_times(traces):
    table = summary_table(traces[traces["method"] != "nuts"], reference="nuts")
    assert table["seconds_to_1pct_of_nuts"].isna().all()
    assert table["seconds_for_nuts_to_1pct_of_final"].isna().all()
    assert list(table["method"]) == ["advi_M1", "hmc"]


def test_a_summary_without_a_reference_has_no_reach_column(traces):
    table = summary_table(traces, reference=None, preferred=["advi_M1", "nuts", "hmc"])
    assert not [c for c in table.columns if c.startswith("seconds_to_")]
    assert table.set_index("method").loc["nuts", "final_heldout_lpd"] == pytest.approx(-1.1)


def test_a_reference_that_did_not_run_gives_no_times(traces):
    table = summary_table(traces, reference="advi_M1_B1000")
    assert table["seconds_to_1pct_of_advi_M1_B1000"].isna().all()


@pytest.mark.parametrize(("info", "text"), [
    ({"iterations": 1200, "converged": True, "convergence_reason": "median"},
     "converged (median rule) at iteration 1200"),
    ({"iterations": 30000, "converged": False, "convergence_reason": "max_iter"},
     "not converged: max_iter at iteration 30000"),
    ({"iterations": 500, "converged": False, "convergence_reason": "stopped by checkpoint",
      "stopped_by_budget": True}, "stopped by the budget at iteration 500"),
    ({"iterations": 6, "stop_reason": "the next HMC transition needed 1e+06 leapfrog steps"},
     "stopped after 6 transitions: the next HMC transition needed 1e+06 leapfrog steps"),
    ({"iterations": 2000, "stop_reason": None}, "all 2000 transitions"),
])
def test_run_ending_says_how_a_run_ended(info, text):
    assert run_ending(info) == text


def test_summary_says_how_the_first_seeds_run_ended(tmp_path, traces):
    infos = []
    for method, seed, info in [("hmc", 0, {"iterations": 50, "stop_reason": "budget"}),
                               ("nuts", 1, {"iterations": 2000}),
                               ("nuts", 0, {"iterations": 100, "stop_reason": "budget"})]:
        infos.append(tmp_path / method / f"seed{seed}" / "info.json")
        infos[-1].write_text(json.dumps({"method": method, "seed": seed, **info}))
    (tmp_path / "advi_M1" / "seed0" / "info.json").write_text(  # not given: not read
        json.dumps({"method": "advi_M1", "seed": 0, "iterations": 1, "stop_reason": "x"}))
    endings = read_endings(infos)
    assert len(endings) == 3
    table = summary_table(traces, reference="nuts", endings=endings).set_index("method")
    assert table.loc["nuts", "ended"] == "stopped after 100 transitions: budget"
    assert table.loc["hmc", "ended"] == "stopped after 50 transitions: budget"
    assert np.isnan(table.loc["advi_M1", "ended"])  # no info.json
