"""benchmarks/bench_advi.py's comparison with Stan's ADVI: each robust fresh process is
divided by the median of Stan's runs in its own round, and the target is checked on the
median of those ratios."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench_scripts import load

import advi  # noqa: F401  (imported, so that a baseline's advi cannot be)
from advi_repro.planning.paths import REPO_ROOT

bench_advi = load("bench_advi")
baseline_code = load("baseline_code")


def _stan(number, seconds):
    return [{"round": number, "seed": i, "fit_s": s, "process_s": s + 2, "iterations": 1000,
             "converged": True, "lpd": -1.45} for i, s in enumerate(seconds)]


def _ours(number, cache, total):
    return {"round": number, "preset": "robust", "cache": cache, "fit_s": total - 0.5,
            "sample_s": 0.5}


def test_each_round_is_compared_with_stans_runs_of_the_same_round(capsys):
    # round 0 ran on a loaded machine (Stan 8 s, ours 4 s), round 1 on a quiet one (Stan 5 s,
    # ours 3 s), round 2 between: pooling Stan's runs would mix the loads
    stan = _stan(0, [8.0, 9.0, 7.0]) + _stan(1, [5.0, 6.0, 4.0]) + _stan(2, [6.0])
    ours = [_ours(0, "cold", 4.0), _ours(1, "cold", 3.0), _ours(2, "cold", 2.4),
            _ours(0, "warm", 2.0), _ours(1, "warm", 3.0), _ours(2, "warm", 1.2),
            {**_ours(0, "off", 9.0), "preset": "stan"}]
    verdicts = bench_advi.report_stan(stan, ours)
    cold, warm = verdicts
    assert cold[1] == pytest.approx(0.5)  # median of 4/8, 3/5, 2.4/6
    assert warm[1] == pytest.approx(0.25)  # median of 2/8, 3/5, 1.2/6
    assert not bench_advi.met(cold) and bench_advi.met(warm)
    assert "round 1: robust cold TOTAL / Stan's median 5.00 s: 0.600" in capsys.readouterr().out


def test_no_stan_runs_no_verdict():
    assert bench_advi.report_stan([], [_ours(0, "cold", 3.0)]) == []


def test_the_fresh_process_table_names_each_rows_round(capsys):
    row = {"round": 2, "preset": "robust", "cache": "cold", "import_s": 1.5, "compile_s": 2.5,
           "wall_s": 2.0, "fit_s": 4.6, "sample_s": 0.3, "process_s": 9.0, "lpd": -1.4231,
           "iterations": 1400, "reason": "rhat", "start": "laplace", "cache_dir": "/tmp/x"}
    verdicts = bench_advi.report_e1([row])
    line = next(x for x in capsys.readouterr().out.splitlines() if "robust  cold" in x)
    assert line.split()[:3] == ["2", "robust", "cold"] and "4.90" in line
    assert [v[1] for v in verdicts][0] == pytest.approx(4.9)


def test_iteration_ratios_pair_the_timings_of_each_repeat(capsys):
    # three interleaved repeats: SVI's fastest repeat came in a quiet minute and the step's
    # in a loaded one, so the ratio of the medians (1.5 / 1.45 = 1.03) would miss the target
    # that every repeat's own pair meets or misses as it was: 0.8, 1.38, 0.6 -> median 0.8
    names = {name for num, den, _ in bench_advi.RATIOS for name in (num, den)}
    timings = {name: [1.0, 1.0, 1.0] for name in names}
    timings.update({"step robust": [1.0, 2.0, 1.5], "svi step": [1.25, 1.45, 2.5]})
    verdicts = dict((label, value) for label, value, _, _ in
                    bench_advi.report_ratios({1: timings, 10: timings}))
    assert verdicts["(a) step robust / svi step, M = 1"] == pytest.approx(0.8)
    assert verdicts["(a) step stan / grad call, M = 10"] == pytest.approx(1.0)
    line = next(x for x in capsys.readouterr().out.splitlines() if "robust / svi" in x)
    assert "0.800 (0.600-1.379)" in line and "target <= 1.0" in line


def _timed(code, number, cache, total):
    return {**_ours(number, cache, total), "code": code}


def test_the_baseline_is_compared_round_by_round_with_the_current_code(capsys):
    # round 0 loaded (both slow), round 1 quiet: each pair is divided within its round
    rows = [_timed("current", 0, "cold", 6.0), _timed("baseline", 0, "cold", 8.0),
            _timed("current", 1, "cold", 3.3), _timed("baseline", 1, "cold", 3.0),
            _timed("current", 2, "cold", 4.0), _timed("baseline", 2, "cold", 5.0),
            _timed("current", 0, "warm", 2.0), _timed("baseline", 0, "warm", 2.0),
            {**_timed("current", 0, "off", 9.0), "preset": "stan"}]
    for row in rows:
        row.update(import_s=1.0, compile_s=1.0, wall_s=1.0, process_s=9.0, lpd=-1.4231,
                   iterations=1400, reason="rhat", start="laplace")
    cold, warm = bench_advi.report_baseline(rows, "abc123")
    assert cold[1] == pytest.approx(0.8)  # median of 0.75, 1.1, 0.8
    assert bench_advi.met(cold) and warm[1] == pytest.approx(1.0) and "1 rounds" in warm[0]
    assert "round 1, cold: 3.30 s / 3.00 s = 1.100" in capsys.readouterr().out


def test_a_revision_that_is_not_a_commit_is_refused_before_anything_runs():
    with pytest.raises(baseline_code.BaselineError, match="'no-such-rev'.*not a commit"):
        baseline_code.resolve(REPO_ROOT, "no-such-rev")


@pytest.mark.skipif(shutil.which("git") is None or not (REPO_ROOT / ".git").exists(),
                    reason="needs git and a git checkout of the repository")
def test_the_baseline_checkout_is_what_a_fresh_process_imports():
    with baseline_code.checkout(REPO_ROOT, "HEAD") as path:
        assert [p.name for p in path.iterdir()] == ["advi"]
        child = subprocess.run(
            [sys.executable, "-c", "import sys, bench_advi; "
             "print(bench_advi.import_advi(sys.argv[1]).__file__)", str(path)],
            cwd=REPO_ROOT / "benchmarks", capture_output=True, text=True, check=True)
        assert Path(child.stdout.strip()).is_relative_to(path)
        # in a process that has imported advi already, the baseline cannot be loaded
        with pytest.raises(ImportError, match="not from the baseline"):
            bench_advi.import_advi(str(path))
    assert not path.exists()


def test_the_targets_of_several_rounds_are_checked_on_their_median(capsys):
    base = {"preset": "robust", "import_s": 1.0, "compile_s": 1.0, "wall_s": 1.0,
            "sample_s": 0.0, "process_s": 9.0, "iterations": 1400, "reason": "rhat",
            "start": "laplace", "cache_dir": "/tmp/x"}
    rows = [{**base, "round": n, "cache": cache, "fit_s": s, "lpd": -1.423 - gap}
            for n, (cache, s, gap) in enumerate([("cold", 4.0, 0.001), ("cold", 2.0, 0.02),
                                                 ("cold", 2.5, 0.0), ("warm", 1.5, 0.0)])]
    verdicts = {label: (value, bench_advi.met(v))
                for v in bench_advi.report_e1(rows) for label, value, _, _ in [v]}
    assert verdicts["(b) E1 robust cold fit + 1,000 draws, s (median of 3)"] == (2.5, True)
    assert verdicts["(b) E1 robust warm-cache fresh process, fit + 1,000 draws, s (median of 1)"
                    ] == (1.5, True)
    gap, ok = verdicts["(b) E1 robust |lpd - NUTS|, nats (largest)"]
    assert gap == pytest.approx(0.02) and not ok


def test_the_baseline_runs_right_beside_our_robust_fit_first_in_odd_rounds(monkeypatch, tmp_path):
    calls = []

    def fake_child(kind, preset, cache, cache_home, args, advi_path=None):
        calls.append((preset, cache, "baseline" if advi_path else "current"))
        return {}

    monkeypatch.setattr(bench_advi, "run_child", fake_child)
    even = [("robust", "cold", "current"), ("robust", "warm", "current"),
            ("robust", "cold", "baseline"), ("robust", "warm", "baseline")]
    rest = [("stan", "cold", "current"), ("stan", "warm", "current"),
            ("stan", "off", "current"), ("robust", "off", "current")]
    bench_advi.round_of_processes("e1", None, 0, tmp_path)
    assert calls == even + rest
    calls.clear()
    bench_advi.round_of_processes("e1", None, 1, tmp_path)
    assert calls == even[2:] + even[:2] + rest
    calls.clear()
    bench_advi.round_of_processes("e1", None, 1)  # no baseline: as before
    assert calls == [(p, c, "current") for p in ("stan", "robust")
                     for c in ("cold", "warm", "off")]
