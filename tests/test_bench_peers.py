"""benchmarks/bench_peers.py's pure parts, on made-up traces: time and gradients to within
1% of NUTS's final held-out lpd, seconds per iteration, our ratios and the tables. Nothing
here runs a method, and loading the script imports neither BlackJAX nor JAX."""

import math
import subprocess
import sys
from types import SimpleNamespace

import pytest
from bench_scripts import BENCHMARKS, load

bench_peers = load("bench_peers")
Point, MethodRun = bench_peers.Point, bench_peers.MethodRun


def _trace(*rows):
    """Points from (seconds, grads, iteration, lpd) tuples."""
    return [Point(*row) for row in rows]


NUTS = MethodRun("nuts", _trace((1.0, 1000, 50, -3.0), (4.0, 9000, 100, -2.0)), "finished")
STAN = MethodRun("advi_stan", _trace((0.1, 100, 100, -2.5), (0.2, 200, 200, -2.01),
                                     (0.3, 300, 300, -2.0)), "mean")
ROBUST = MethodRun("advi_robust", _trace((0.5, 150, 100, -2.2), (0.6, 250, 200, -2.1)),
                   "rhat")
SVI = MethodRun("numpyro_svi", _trace((0.1, 100, 100, -2.3), (0.4, 400, 400, -2.015)),
                "max_iter")


def test_the_threshold_is_one_percent_below_the_reference_whatever_its_sign():
    assert bench_peers.threshold(-2.0) == pytest.approx(-2.02)
    assert bench_peers.threshold(3.0) == pytest.approx(2.97)


def test_the_first_checkpoint_within_one_percent_is_found_or_none():
    assert bench_peers.first_within(STAN.trace, -2.0) == STAN.trace[1]
    assert bench_peers.first_within(ROBUST.trace, -2.0) is None
    nan_first = _trace((0.1, 1, 1, math.nan), (0.2, 2, 2, -2.0))
    assert bench_peers.first_within(nan_first, -2.0) == nan_first[1]


def test_per_iteration_leaves_the_start_before_the_first_checkpoint_out():
    # the first checkpoint carries a start of 1 s and 500 gradients
    trace = _trace((1.0, 600, 100, -3.0), (1.2, 800, 300, -2.0))
    seconds, grads = bench_peers.per_iteration(trace)
    assert seconds == pytest.approx(0.001) and grads == pytest.approx(1.0)
    assert all(math.isnan(x) for x in bench_peers.per_iteration(trace[:1]))
    assert all(math.isnan(x) for x in bench_peers.per_iteration([]))
    # Pathfinder's paths each start from scratch: the last path's own rate
    paths = _trace((0.3, 31, 30, -3.0), (0.8, 81, 80, -2.5))
    assert bench_peers.per_iteration(paths, from_scratch=True) == pytest.approx((0.01, 1.0125))


def test_settling_is_the_gradients_at_the_end_over_those_at_its_own_answer():
    # within 1% of its own final -2.0 from the second checkpoint (-2.01), 200 of 300 grads
    assert bench_peers.settling(STAN.trace) == pytest.approx(1.5)
    # within 1% only at the end: it stopped at its answer
    assert bench_peers.settling(ROBUST.trace) == pytest.approx(1.0)
    # the start's 500 gradients count: a first checkpoint already at the answer
    started = _trace((1.0, 600, 100, -2.0), (1.2, 1200, 700, -2.0))
    assert bench_peers.settling(started) == pytest.approx(2.0)
    for trace in ([], _trace((0.1, 1, 1, math.nan)), _trace((0.0, 0, 0, -2.0))):
        assert math.isnan(bench_peers.settling(trace))


def test_speedup_is_the_peers_seconds_over_ours_or_says_who_never_got_there():
    ours, peer = Point(0.5, 1, 1, -2.0), Point(2.0, 1, 1, -2.0)
    assert bench_peers.speedup(ours, peer) == "4.00x"
    assert bench_peers.speedup(None, peer) == "ours never"
    assert bench_peers.speedup(ours, None) == "peer never"
    assert bench_peers.speedup(None, None) == "both never"


def test_the_reference_is_nuts_final_lpd():
    assert bench_peers.reference_lpd([STAN, NUTS]) == -2.0
    assert bench_peers.reference_lpd([STAN, SVI]) is None
    assert bench_peers.reference_lpd([MethodRun("nuts", [], "error: boom")]) is None
    # --reference: a given lpd wins over this run's NUTS, and needs no NUTS at all
    assert bench_peers.reference_lpd([STAN, NUTS], given=-4.5) == -4.5
    assert bench_peers.reference_lpd([STAN, SVI], given=-4.5) == -4.5


def test_the_method_table_has_a_row_per_method_with_its_time_to_the_threshold():
    table = bench_peers.method_table([STAN, ROBUST, NUTS], -2.0, floor_ms=0.5)
    lines = table.splitlines()
    assert len(lines) == 2 + 3 and "x floor (0.5 ms)" in lines[0]
    stan = next(line for line in lines if line.startswith("| advi_stan "))
    cells = [cell.strip() for cell in stan.strip("|").split("|")]
    # 0.2 s over 200 iterations: 1 ms per iteration, 2 x the 0.5-ms floor, 1 gradient
    assert cells[1:5] == ["0.001", "2", "1", "300"]
    assert cells[5] == "0.2 s (200 grads)" and cells[6:] == ["-2.0000", "mean", "1.5x"]
    assert "| never |" in next(line for line in lines if line.startswith("| advi_robust "))


def test_the_method_table_without_a_reference_or_a_trace():
    failed = MethodRun("blackjax_pathfinder", [], "error: ValueError: no")
    table = bench_peers.method_table([STAN, failed], None, floor_ms=1.0)
    assert "| n/a |" in table and "error: ValueError: no" in table


def test_a_methods_line_says_when_it_reached_a_given_reference(monkeypatch, capsys):
    monkeypatch.setattr(bench_peers, "run_svi", lambda setup, budget: SVI)
    assert bench_peers.run_method("numpyro_svi", None, None, reference=-2.0) is SVI
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.endswith("lpd -2.0150; within 1%: 0.4 s (400 grads)")
    bench_peers.run_method("numpyro_svi", None, None)
    assert "within 1%" not in capsys.readouterr().out


def test_the_matmul_precision_is_full_unless_jax_default_is_asked_for():
    assert bench_peers.parse_arguments([]).matmul_precision == "highest"
    assert bench_peers.parse_arguments(["--matmul-precision", "jax"]).matmul_precision == "jax"
    with pytest.raises(SystemExit):
        bench_peers.parse_arguments(["--matmul-precision", "tf32"])


def test_the_ratio_table_compares_each_peer_with_both_presets():
    table = bench_peers.ratio_table([STAN, ROBUST, SVI, NUTS], -2.0)
    lines = table.splitlines()
    assert "advi_stan sooner by" in lines[0] and "advi_robust sooner by" in lines[0]
    assert [line.split("|")[1].strip() for line in lines[2:]] == ["numpyro_svi", "nuts"]
    nuts = lines[-1]
    assert "4 s (9,000 grads)" in nuts and "20.00x" in nuts and "ours never" in nuts
    svi = lines[2]
    assert "2.00x" in svi  # SVI at 0.4 s, Stan's preset at 0.2 s
    assert "no ratios" in bench_peers.ratio_table([STAN, SVI], None)
    assert "no ratios" in bench_peers.ratio_table([STAN, ROBUST], -2.0)  # no peer


def test_names_are_checked_against_the_valid_ones_in_their_order():
    assert bench_peers.check_names(["nuts", "advi_stan"], bench_peers.METHODS, "method") == [
        "advi_stan", "nuts"]
    with pytest.raises(ValueError, match="unknown method 'nutz'; valid methods: advi_stan"):
        bench_peers.check_names(["nutz"], bench_peers.METHODS, "method")


def test_an_unknown_experiment_stops_before_anything_runs(capsys):
    with pytest.raises(SystemExit, match="unknown experiment 'e9'.*linreg_ard, election88"):
        bench_peers.main(["--experiments", "e9"])


def test_a_given_reference_with_two_experiments_stops_before_anything_runs():
    with pytest.raises(SystemExit, match="--reference -4.5 is one experiment's lpd, but 2 "):
        bench_peers.main(["--experiments", "linreg_ard", "election88", "--reference", "-4.5"])


def test_loading_the_script_imports_neither_blackjax_nor_jax():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_peers; "
            "assert 'blackjax' not in sys.modules and 'jax' not in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(BENCHMARKS)], check=True)


def test_a_compiled_program_larger_than_free_memory_is_named_and_skipped():
    stats = SimpleNamespace(argument_size_in_bytes=2**30, output_size_in_bytes=0,
                            temp_size_in_bytes=29 * 2**30)
    assert bench_peers.too_big(stats, 31 * 2**30) is None
    assert bench_peers.too_big(stats, 20 * 2**30) == (
        "skipped: needs 30 GiB (XLA's memory analysis), 20 GiB free")
    assert bench_peers.too_big(None, 0) is None  # a backend that does not report sizes
    assert bench_peers.available_memory(None) > 0  # a CPU: the host's free memory
    gpu = {"bytes_limit": 80 * 2**30, "bytes_in_use": 2**30}  # jax.Device.memory_stats()
    assert bench_peers.available_memory(gpu) == 79 * 2**30


def test_pathfinder_reruns_only_paths_whose_elbo_draws_fit_in_memory():
    assert bench_peers.pathfinder_maxiters(21) == [30, 100, 300, 1000]
    assert bench_peers.pathfinder_maxiters(6_000) == [30, 100]  # maxiter 300: 1.4 GB
    assert bench_peers.pathfinder_maxiters(10**7) == [30]  # BlackJAX's default, always
