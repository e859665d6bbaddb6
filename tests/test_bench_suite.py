"""The validation suite (``benchmarks/bench_suite.py``): its scoring and tables, and its fast
subset, the repository's own known posteriors, fitted by the robust preset: no fit may end
silently far off or return non-finite draws (a change that does fails here)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from bench_scripts import BENCHMARKS, load

from advi_repro.planning.datasets import fetch as fetching

suite = load("bench_suite")
targets = load("suite_targets")
table = load("suite_table")


def test_score_is_the_z_error_of_the_means_and_flags_non_finite_draws():
    rng = np.random.default_rng(0)
    draws = rng.normal([1.0, -2.0], [2.0, 0.5], size=(20_000, 2))
    row = suite.score(draws, np.array([1.0, -2.0]), np.array([2.0, 0.5]))
    assert row["rms_z"] < 0.03 and row["log_sd"] < 0.03 and not row["nonfinite"]
    off = suite.score(draws, np.array([3.0, -2.0]), np.array([2.0, 0.5]))
    assert off["max_z"] == pytest.approx(1.0, abs=0.03)
    assert off["rms_z"] == pytest.approx(math.sqrt(0.5), abs=0.03)
    narrow = suite.score(draws, np.array([1.0, -2.0]), np.array([2.0, 1.5]))  # 3x too small
    assert narrow["max_log_sd"] == pytest.approx(math.log(3.0), abs=0.03)
    assert narrow["log_sd"] == pytest.approx(math.log(3.0) / 2, abs=0.03)
    draws[0, 0] = np.inf
    assert suite.score(draws, np.zeros(2), np.ones(2))["nonfinite"]


def test_the_trend_posterior_by_quadrature_matches_a_known_sigma_limit():
    """With many rows the noise sd is pinned down and (a, b) | y is the conjugate Gaussian
    at that sd: the quadrature's means agree with it."""
    year = np.linspace(1980, 2020, 2001)
    y = 3.0 + 0.05 * (year - 2000) + np.random.default_rng(1).normal(0, 0.5, year.size)
    mean, sd = targets.trend_posterior(year, y, grid=4001)
    X = np.stack([np.ones_like(year), year], axis=1)
    precision = np.diag([1e-4, 1e-2]) + X.T @ X / mean[2] ** 2
    exact = np.linalg.solve(precision, X.T @ y / mean[2] ** 2)
    assert np.all(np.abs(mean[:2] - exact) < 0.01 * sd[:2])
    assert mean[2] == pytest.approx(0.5, abs=3 * sd[2])


def test_tables_count_silent_far_off_fits_and_false_alarms(tmp_path):
    def row(target, method, rms, warned=False, seed=0, seconds=1.0, log_sd=0.0):
        return {"target": target, "method": method, "seed": seed, "dim": 2, "rms_z": rms,
                "max_z": rms, "log_sd": log_sd, "nonfinite": False, "warned": warned,
                "raised": None, "seconds": seconds, "cold": True}

    rows = [row("a", "nuts", 0.05, seconds=4.0), row("a", "advi_robust", 2.0),
            row("a", "advi_stan", 0.1, warned=True, log_sd=1.0),
            row("a", "svi", 0.1, log_sd=0.8), row("a", "svi", 0.1, seed=1, log_sd=0.6),
            row("b", "nuts", 0.5), row("b", "advi_robust", 3.0)]  # b: NUTS fails, not counted
    assert table.counted_targets(rows) == {"a": True, "b": False}
    lines = "\n".join(table.summary(rows))
    assert "| advi_robust | 1 | 2.000 | 1 | 0 | 0 | 0 of 1 | 0.00 | 0 | 0 | 0.25, 0.25 |" in lines
    assert "| advi_stan | 1 | 0.100 | 0 | 0 | 0 | 1 of 1 | 1.00 | 0 | 0 |" in lines  # warned
    assert "| svi | 2 | 0.100 | 0 | 0 | 0 | 0 of 2 | 0.70 | 1 | 0 |" in lines  # 2.2x and 1.8x
    spread = table.SPREAD_NOTE + ", ..."  # a note of the sds is no false alarm of the means
    noted = [row("a", "nuts", 0.05, seconds=4.0),
             {**row("a", "advi_robust", 0.1, warned=True, log_sd=1.0), "notes": [spread]},
             {**row("a", "advi_robust", 0.1, True, seed=1, log_sd=0.5), "notes": [spread]},
             {**row("a", "advi_robust", 0.1, True, seed=2), "notes": [spread, "max_iter"]},
             {**row("a", "advi_robust", 0.1, True, seed=3, log_sd=0.5), "notes": [spread],
              "max_log_sd": 1.0}]  # one quantity 2.7x off: the note is right
    assert "| advi_robust | 4 | 0.100 | 0 | 0 | 0 | 1 of 4 | 0.50 | 0 | 2 |" in "\n".join(
        table.summary(noted))
    far = {**row("a", "advi_robust", 2.0, warned=True), "notes": [spread]}
    assert table.silent(far)  # a note of its sds does not speak for its means
    assert not table.silent({**far, "notes": [spread, "max_iter"]})
    page = tmp_path / "docs" / "library" / "generalisation.md"
    page.parent.mkdir(parents=True)
    page.write_text(f"head\n{table.BEGIN}\nold\n{table.END}\ntail\n")
    table.write_docs("new table", tmp_path)
    assert page.read_text() == f"head\n{table.BEGIN}\nnew table\n{table.END}\ntail\n"


def test_the_legend_says_how_many_fits_ran_at_a_time_for_the_cold_seconds():
    def row(method, jobs, cold=True):
        out = {"method": method, "cold": cold}
        return out if jobs is None else {**out, "jobs": jobs}

    assert table.concurrency([row("nuts", 1), row("svi", 1), row("nuts", 2, False)]) == (
        "cold s: 1 fit at a time")
    assert table.concurrency([row("nuts", 2)]) == "cold s: 2 fits at a time"
    assert table.concurrency([row("nuts", None)]) == "cold s: fits at a time unrecorded"
    assert table.concurrency([row("nuts", 2), row("svi", 1), row("svi", None)]) == (
        "cold s: mixed runs, 1 and 2 fits at a time and unrecorded: not comparable")


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity calls")
def test_workers_run_side_by_side_take_their_own_cpus(tmp_path):
    """Two workers of a --jobs 2 run: each pinned to half the CPUs, not the same ones, and
    given them back after; one worker alone is not pinned."""
    usable = os.sched_getaffinity(0)
    with suite.pinned(1, tmp_path) as alone:
        assert alone is None and os.sched_getaffinity(0) == usable
    child = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_suite; "
             "from pathlib import Path\n"
             "with bench_suite.pinned(2, Path(sys.argv[2])) as cpus: print(cpus)")
    with suite.pinned(2, tmp_path) as first:
        assert set(first) == os.sched_getaffinity(0) <= usable
        assert len(first) == max(1, len(usable) // 2)
        out = subprocess.run(  # started as the driver starts it: on every usable CPU
            [sys.executable, "-c", child, str(BENCHMARKS), str(tmp_path)],
            preexec_fn=lambda: os.sched_setaffinity(0, usable), capture_output=True,
            text=True, check=True).stdout
        second = json.loads(out.strip().splitlines()[-1])
        assert len(second) == len(first)
        if len(usable) >= 2:  # the other worker takes CPUs this one does not hold
            assert not set(first) & set(second)
    assert os.sched_getaffinity(0) == usable


MEANFIELD_BIASED = ("GP Poisson, jitter 1e-10", "everyday poisson_glmm",
                    "everyday spline_random_walk", "everyday truncated_normal",
                    "everyday local_level", "everyday poisson_ar_states",
                    "everyday gp_classification")


@pytest.mark.parametrize("name", targets.FAST)
def test_the_robust_preset_is_never_silently_far_off_on_the_fast_subset(name):
    """Each own target, robust mean-field, one seed: within 1 posterior sd (RMS z) or it
    warned; its draws finite; and in fact within 0.5 sd (the uncentred trend through its
    promotion to float64), but for the Gaussian process, whose mean-field means land
    0.1-0.6 sd off (seeds 0-2, in float64), with sds 10 times too small, and the
    non-centred Poisson GLMM, whose mean-field (mu, s) end 0.5-0.6 sd off (the family's bias:
    full-rank 0.09-0.15), the random-walk spline (0.5-0.6 after 10,000 iterations, with a
    warning; full-rank 0.07-0.08), the truncated normal (0.58-0.64, its sds noted;
    full-rank 0.26-0.35), the local level (1.8 from its refused start, warned by
    k-hat; full-rank 0.08-0.09) and the latent AR(1) counts (0.49-0.52, its coefficient
    8.7 sd off, noted by the sds note at the Laplace mode; full-rank 0.03), and the latent
    GP classifier (0.67-0.68 in float64, its amplitude 1.6 sd low and its length scale's sd
    2.6x too small, noted; full-rank 0.09-0.10)."""
    problem = targets.TARGETS[name].make()
    row = suite.run_one(name, "advi_robust", 0, problem)
    assert row["raised"] is None, row["raised"]
    assert not row["nonfinite"]
    assert row["rms_z"] <= table.FAR_OFF or row["warned"], json.dumps(row)
    assert not table.silent(row)
    assert row["rms_z"] <= table.CLOSE or name in MEANFIELD_BIASED, json.dumps(row)


def test_full_rank_extra_starts_find_the_lotka_volterra_main_mode():
    """Lotka-Volterra, robust full-rank, seed 1: the search from the initial mean ends at a
    minor mode (log p -172.5, 8.3 sd off, accepted and unwarned). Whitened by that mode's
    L, 3 of 4 extra starts went back to it; scaled by its conditional sds, two reach the
    main mode (-132.6), where the fit then starts."""
    problem = targets.TARGETS["posteriordb lotka_volterra"].make()
    row = suite.run_one("posteriordb lotka_volterra", "advi_robust_fullrank", 1, problem)
    assert row["raised"] is None and row["rms_z"] <= table.CLOSE, json.dumps(row)


def test_eight_extra_starts_find_the_lotka_volterra_main_mode_at_seed_14():
    """Lotka-Volterra, robust mean-field, seed 14: the search from the initial mean and all
    4 extra starts of the old default reached the minor mode (the fit 8.2 sd off,
    unwarned); of 8, some reach the main mode."""
    problem = targets.TARGETS["posteriordb lotka_volterra"].make()
    row = suite.run_one("posteriordb lotka_volterra", "advi_robust", 14, problem)
    assert row["raised"] is None and row["rms_z"] <= table.CLOSE, json.dumps(row)


def test_a_glmm_whose_unwhitened_gradient_grows_keeps_its_laplace_start():
    """The non-centred Poisson GLMM in float64 from seed 1's random q: the unwhitened first
    stage's gradient grows 100-fold (a "runaway") on its way up, where -H is indefinite.
    That once refused the start, and the fit from the random q ended 30 sd off (warned);
    whitened, the search reaches the mode."""
    import jax

    import advi

    problem = targets.TARGETS["everyday poisson_glmm"].make()
    result = advi.fit(problem.model, *problem.args, rng_key=jax.random.PRNGKey(1),
                      preset="robust", dtype="float64", progress_bar=False)
    assert result.start.startswith("laplace"), result.start
    draws = problem.quantities(jax.device_get(result.sample(jax.random.PRNGKey(2), 2000)))
    z = (draws.mean(0) - problem.mean) / problem.sd
    assert float(np.sqrt(np.mean(z**2))) < table.FAR_OFF, z


def test_a_note_of_the_sds_does_not_send_a_fit_to_float64():
    """The suite's non-centred Poisson GLMM at seed 1: its float32 Laplace start meets
    overflows on the way (a signal of float32 trouble) and its fit ends with only the note
    of its sds (2.6x too small in two coordinates), which float64 would not mend: the fit
    stays in float32 (it was redone, at twice the cost, before the note was excluded)."""
    import jax

    import advi
    from advi.spread import SPREAD_NOTE

    problem = targets.TARGETS["everyday poisson_glmm"].make()
    fit = advi.fit(problem.model, *problem.args, rng_key=jax.random.PRNGKey(1),
                   preset="robust", progress_bar=False)
    assert [n for n in fit.warnings if n.startswith(SPREAD_NOTE)], fit.warnings
    assert "float64" not in fit.start, fit.start


def test_a_slow_fit_whose_start_met_overflows_is_not_redone_in_float64():
    """The everyday stochastic volatility model: its Laplace start meets overflows on the way
    up from a random q and is accepted; the fit, cut at max_iter = 2,000 (it stops by split
    R-hat at 3,450 iterations), then warns only that max_iter was reached, besides its
    note on sds (which never sends a fit to float64). Float64 does not hasten it (redone
    at 10,000, it ended as far off at twice the cost), so ``dtype="auto"`` keeps the
    float32 fit."""
    import jax

    import advi

    problem = targets.TARGETS["everyday stochastic_volatility"].make()
    result = advi.fit(problem.model, *problem.args, rng_key=jax.random.PRNGKey(0),
                      preset="robust", max_iter=2000, progress_bar=False)
    assert result.start.startswith("laplace") and "float64" not in result.start, result.start
    assert [w[:9] for w in result.warnings if not w.startswith(advi.spread.SPREAD_NOTE)
            ] == ["max_iter="], result.warnings


@pytest.mark.skipif(fetching.default_mirror() is None, reason="no data mirror")
def test_the_paper_target_is_e2_on_its_real_data_against_its_stored_reference(tmp_path):
    """E2 in the suite: the experiment's model on the mirror's 10,000 poll respondents, all
    90 latent coordinates compared, against the float64 NUTS reference kept in
    suite_references.json (no NUTS run here); it is not in the fast subset."""
    import json

    import advi

    name = "paper election88 (E2)"
    assert name in targets.TARGETS and name not in targets.FAST
    stored = json.loads(targets.REFERENCES.read_text())["paper election88"]
    problem = targets.paper_problem("election88", tmp_path)
    assert problem.dim == 90 and problem.args[0].shape == (10_000,)
    np.testing.assert_array_equal(problem.mean, stored["mean"])
    assert problem.sd.shape == (90,) and np.all(problem.sd > 0)
    target = advi.from_numpyro(problem.model, problem.args)
    assert target.dim == problem.dim
    draws = {k: v[None] for k, v in target.constrain(np.zeros(problem.dim, np.float32)).items()}
    assert problem.quantities(draws).shape == (1, 90)
