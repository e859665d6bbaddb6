"""The whole workflow at scale=smoke, in a temporary working directory, from real runs."""

import json
import os
import subprocess

import pandas as pd
import pytest

from runners.paths import REPO_ROOT

EXPERIMENTS = {"linreg_ard": "fig4a_linreg_ard", "election88": "fig4b_election88"}
METHODS = ("advi_M1", "advi_M10", "nuts", "hmc")
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # the repo's packages, installed or not


def snakemake(workdir, *args, timeout=600):
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(workdir), "--config", "scale=smoke", "seeds=[0]", *args]
    return subprocess.run(command, cwd=workdir, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Runs the workflow once (2 fits at a time: smoke timings need not be clean)."""
    workdir = tmp_path_factory.mktemp("workflow")
    result = snakemake(workdir, "--cores", "2", "--set-threads", "fit=1")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_run_leaves_a_trace_and_an_info_json(smoke, experiment):
    for method in METHODS:
        run = smoke / "results" / "runs" / experiment / method / "seed0"
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
        if method.startswith("advi"):
            assert "elbo" in trace.columns and isinstance(info["converged"], bool)
        else:
            assert {"divergences", "accept_rate"} <= set(info)
        assert "iteration" in (smoke / "results" / "logs" / "fit" / experiment / method
                               / "seed0.log").read_text()


@pytest.mark.parametrize(("experiment", "figure"), EXPERIMENTS.items())
def test_figures_and_summaries_are_made(smoke, experiment, figure):
    for ext in ("png", "pdf"):
        assert (smoke / "results" / "figures" / f"{figure}.{ext}").stat().st_size > 10_000
    summary = pd.read_csv(smoke / "results" / "summaries" / f"{experiment}.csv")
    assert list(summary["method"]) == list(METHODS)
    assert summary["final_heldout_lpd"].notna().all()
    assert "seconds_to_1pct_of_nuts" in summary.columns


def test_the_report_builds_with_the_measured_numbers_in_the_captions(smoke):
    result = snakemake(smoke, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    html = (smoke / "results" / "report.html").read_text()
    assert html.count("seconds_to_1pct_of_nuts") >= 2  # both captions' tables
    assert "ADVI gets there fastest" in html  # the paper's claim for Figure 4b


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
