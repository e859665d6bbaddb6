"""The whole workflow at scale=smoke, in a temporary working directory, from real runs."""

import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

from runners.paths import REPO_ROOT

PAPER_METHODS = ("advi_M1", "advi_M10", "advi_robust_M1", "nuts", "hmc")
LINREG_METHODS = (*PAPER_METHODS, "hmc_init-advi")
ADVI_NUTS_HMC = ("advi_M1", "advi_robust_M1", "nuts", "hmc")
MINIBATCHES = ("advi_M1_B50", "advi_M1_B100", "advi_M1_B500", "advi_M1_B1000")
EXPERIMENTS = {  # experiment: (accuracy figure, methods in the experiment's order, reference)
    "linreg_ard": ("fig4a_linreg_ard", LINREG_METHODS, "nuts"),
    "election88": ("fig4b_election88", PAPER_METHODS, "nuts"),
    "gamma_poisson_nmf": ("fig5a_gamma_poisson", ADVI_NUTS_HMC, "nuts"),
    "dirichlet_exponential_nmf": ("fig5b_dirichlet_exponential", ADVI_NUTS_HMC, "nuts"),
    "gmm": ("fig1a_gmm", ADVI_NUTS_HMC, "nuts"),
    "gmm_minibatch": ("fig1b_gmm_minibatch", MINIBATCHES, "advi_M1_B1000"),
}
FACTORS = {"gamma_poisson_nmf": "fig5c_gamma_poisson_factors",
           "dirichlet_exponential_nmf": "fig5d_dirichlet_exponential_factors"}
RUNS = [(e, m) for e, (_, methods, _) in EXPERIMENTS.items() for m in methods]
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # the repo's packages, installed or not


def snakemake(workdir, *args, timeout=900):
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(workdir), "--config", "scale=smoke", "seeds=[0]", *args]
    return subprocess.run(command, cwd=workdir, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Runs the workflow once, every default experiment (2 fits at a time: smoke timings
    need not be clean)."""
    workdir = tmp_path_factory.mktemp("workflow")
    result = snakemake(workdir, "--cores", "2", "--set-threads", "fit=1")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def run_folder(workdir, experiment, method):
    return workdir / "results" / "runs" / experiment / method / "seed0"


@pytest.mark.parametrize(("experiment", "method"), RUNS)
def test_every_run_leaves_a_trace_a_posterior_mean_and_an_info_json(smoke, experiment, method):
    run = run_folder(smoke, experiment, method)
    trace = pd.read_csv(run / "trace.csv")
    assert {"experiment", "method", "seed", "iteration", "wall_s", "heldout_lpd"} <= set(
        trace.columns)
    assert (trace["experiment"] == experiment).all() and (trace["method"] == method).all()
    assert trace["heldout_lpd"].notna().all() and (trace["heldout_lpd"] < 0).all()
    assert trace["wall_s"].is_monotonic_increasing
    info = json.loads((run / "info.json").read_text())
    assert info["config"]["scale"]["name"] == "smoke"
    assert info["compile_s"] > 0 and info["iterations"] == trace["iteration"].iloc[-1]
    assert info["environment"]["packages"]["jax"]
    with np.load(run / "posterior_mean.npz") as mean:
        assert mean["iteration"] == info["iterations"] and mean["num_draws"] >= 1
    if method.startswith("advi"):
        assert "elbo" in trace.columns and isinstance(info["converged"], bool)
    else:
        assert {"divergences", "accept_rate", "stop_reason"} <= set(info)
    assert "iteration" in (smoke / "results" / "logs" / "fit" / experiment / method
                           / "seed0.log").read_text()


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_figures_and_summaries_are_made(smoke, experiment):
    figure, methods, reference = EXPERIMENTS[experiment]
    for ext in ("png", "pdf"):
        assert (smoke / "results" / "figures" / f"{figure}.{ext}").stat().st_size > 10_000
    summary = pd.read_csv(smoke / "results" / "summaries" / f"{experiment}.csv")
    assert list(summary["method"]) == list(methods)
    assert summary["final_heldout_lpd"].notna().all()
    assert f"seconds_to_1pct_of_{reference}" in summary.columns


@pytest.mark.parametrize(("experiment", "figure"), FACTORS.items())
def test_the_factor_figures_draw_the_advi_posterior_mean_of_beta(smoke, experiment, figure):
    for ext in ("png", "pdf"):
        assert (smoke / "results" / "figures" / f"{figure}.{ext}").stat().st_size > 10_000
    with np.load(run_folder(smoke, experiment, "advi_M1") / "posterior_mean.npz") as mean:
        beta, theta = mean["beta"], mean["theta"]
        assert str(mean["phase"]) == "advi"
    assert beta.shape == (560, 10) and (beta > 0).all()  # 28 x 20 pixels, K = 10
    assert theta.shape == (40, 10)  # smoke: the first 40 frames
    if experiment == "gamma_poisson_nmf":  # the mean of ordered draws is ordered
        assert (np.diff(theta, axis=1) > 0).all()
    else:  # Dirichlet: the mean of simplex draws is on the simplex
        np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-4)


def test_the_mixture_experiments_share_one_memory_mapped_data_file(smoke):
    paths = {json.loads((run_folder(smoke, e, m) / "info.json").read_text())["data"]["path"]
             for e, m in RUNS if e in ("gmm", "gmm_minibatch")}
    assert len(paths) == 1
    path = paths.pop()
    data = np.load(smoke / path, mmap_mode="r")
    assert data.dtype == np.float32 and data.shape == (2000 + 200, 3 * 8)  # smoke: 8 bins
    assert "image_standin" in path  # the procedural stand-in, and its sample figure:
    for ext in ("png", "pdf"):
        figure = f"imageclef_image_standin_seed0_num_bins8_num_heldout200_num_train2000.{ext}"
        assert (smoke / "results" / "figures" / figure).stat().st_size > 10_000
    for method, size in zip(MINIBATCHES, (50, 100, 500, 1000), strict=True):
        info = json.loads((run_folder(smoke, "gmm_minibatch", method) / "info.json").read_text())
        assert info["config"]["method"]["minibatch_size"] == size
        assert info["model_args"]["K"] == 30 and info["data"]["n_train"] == 2000


def test_the_report_builds_with_the_measured_numbers_in_the_captions(smoke):
    result = snakemake(smoke, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    html = (smoke / "results" / "report.html").read_text()
    assert html.count("seconds_to_1pct_of_nuts") >= 5  # the captions' tables
    assert "seconds_to_1pct_of_advi_M1_B1000" in html
    assert "ADVI gets there fastest" in html  # the paper's claim for Figure 4b
    assert "simulated stand-in for the imageCLEF" in html  # Figure 1's data, said
    assert "To use real images instead" in html  # the stand-in sample's caption
    assert "Gamma Poisson Factors" in html


def test_a_second_invocation_redoes_nothing(smoke):
    result = snakemake(smoke, "--cores", "1", "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_a_sweep_through_the_workflow_plans_distinct_runs(tmp_path):
    result = snakemake(tmp_path, "--dry-run", "--config", "experiments=[linreg_ard]",
                       'overrides=["method=advi","method.grad_samples=1,10"]', timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    for method in ("advi_M1", "advi_M10"):
        assert f"results/runs/linreg_ard/{method}/seed0/trace.csv" in result.stdout
    assert "/nuts/" not in result.stdout
