"""Each script of the workflow reads the files its rule declares, and only those: a run with
fewer seeds than an earlier one in the same folder shows its own runs alone."""

import os
import subprocess

import pandas as pd
import pytest

from advi_repro.planning.paths import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed
RUNS = "results/runs/smoke/linreg_ard/advi_M1"
TARGETS = ["results/summaries/linreg_ard.csv", "results/figures/fig4a_linreg_ard.png",
           "results/claims.csv"]

def workflow(workdir, seeds):
    """E1 with ADVI alone (its fastest runs) at smoke scale, for these seeds."""
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(workdir), "--cores", "2", "--config", "scale=smoke", f"seeds={seeds}",
               "experiments=[linreg_ard]", 'overrides=["method=advi"]', "--", *TARGETS]
    result = subprocess.run(command, cwd=workdir, env=ENV, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def final_lpd(workdir, seed):
    trace = pd.read_csv(workdir / RUNS / f"seed{seed}" / "trace.csv")
    return trace.sort_values("iteration")["heldout_lpd"].iloc[-1]


@pytest.fixture(scope="module")
def two_then_one(tmp_path_factory):
    """The summary after seeds [0, 1], and the folder after a second run with seeds [0]."""
    workdir = tmp_path_factory.mktemp("inputs")
    workflow(workdir, "[0,1]")
    first = pd.read_csv(workdir / TARGETS[0])
    workflow(workdir, "[0]")
    return first, workdir


def test_the_first_run_summarises_both_seeds(two_then_one):
    first, workdir = two_then_one
    assert first["runs"].tolist() == [2]
    assert (workdir / RUNS / "seed1" / "trace.csv").exists()  # still there for the second run


def test_the_second_runs_summary_and_figure_use_its_seed_alone(two_then_one):
    _, workdir = two_then_one
    summary = pd.read_csv(workdir / TARGETS[0]).set_index("method")
    assert summary.loc["advi_M1", "runs"] == 1
    assert summary.loc["advi_M1", "final_heldout_lpd"] == pytest.approx(final_lpd(workdir, 0),
                                                                         abs=5e-4)
    plotted = (workdir / "results" / "logs" / "plot_accuracy" / "fig4a_linreg_ard.log"
               ).read_text()
    assert "plotted advi_M1 seed 0" in plotted and "seed 1" not in plotted


def test_the_second_runs_claims_use_its_seed_alone(two_then_one):
    _, workdir = two_then_one
    e1 = pd.read_csv(workdir / TARGETS[2]).set_index("claim").loc["E1"]
    assert f"ADVI (M=1) {final_lpd(workdir, 0):.4g}" in e1["measured"]
    assert f"{final_lpd(workdir, 1):.4g}" not in e1["measured"]
