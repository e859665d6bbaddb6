"""The whole workflow at scale=smoke, in a temporary working directory, from real runs."""

import base64
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from advi_repro.analysis.figures import fill_title
from advi_repro.analysis.summary import read_traces
from advi_repro.planning.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
sys.path.insert(0, str(REPO_ROOT / "tests"))
import plot_accuracy  # noqa: E402
import publish_results  # noqa: E402
import screenshot_report  # noqa: E402
from test_workflow_figures import assert_readable  # noqa: E402

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
    "gmm_minibatch_10x": ("fig1b_gmm_minibatch_10x", MINIBATCHES, "advi_M1_B1000"),
}
FACTORS = {"gamma_poisson_nmf": "fig5c_gamma_poisson_factors",
           "dirichlet_exponential_nmf": "fig5d_dirichlet_exponential_factors"}
RUNS = [(e, m) for e, (_, methods, _) in EXPERIMENTS.items() for m in methods]
HEADER_RGB = (0xEE, 0xF1, 0xF5)  # th's background in analysis/report_pages.py
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed


def snakemake(workdir, *args, config=(), timeout=900, env=ENV):
    """Snakemake at smoke scale, seed 0, plus ``config`` (one --config: a second would
    replace the first)."""
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(workdir), "--config", "scale=smoke", "seeds=[0]", *config, *args]
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, real_data):
    """Runs the workflow once, every default experiment, as the README's smoke command
    does (2 fits at a time: smoke timings need not be clean); skips without the real data
    sets (offline, no mirror)."""
    workdir = tmp_path_factory.mktemp("workflow")
    result = snakemake(workdir, "--cores", "2")  # smoke fits take one core each but one
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def conf_title(experiment):
    """The experiment's title template (conf/experiment/<experiment>.yaml)."""
    return yaml.safe_load((REPO_ROOT / "conf" / "experiment" / f"{experiment}.yaml")
                          .read_text())["title"]


def run_folder(workdir, experiment, method):
    return workdir / "results" / "runs" / "smoke" / experiment / method / "seed0"


@pytest.mark.parametrize(("experiment", "method"), RUNS)
def test_every_run_leaves_a_trace_a_posterior_mean_and_an_info_json(smoke, experiment, method):
    run = run_folder(smoke, experiment, method)
    trace = pd.read_csv(run / "trace.csv")
    assert {"experiment", "method", "seed", "iteration", "wall_s", "heldout_lpd"} <= set(
        trace.columns)
    assert (trace["experiment"] == experiment).all() and (trace["method"] == method).all()
    # finite everywhere: the mixture's histograms are dequantised
    # (advi_repro.planning.datasets.images), so no
    # component can collapse onto the exact zeros of many images (robust ADVI did: +inf)
    assert (np.isfinite(trace["heldout_lpd"])).all()
    if not experiment.startswith("gmm"):  # discrete data, or the regression's noise
        assert (trace["heldout_lpd"] < 0).all()
    assert trace["wall_s"].is_monotonic_increasing
    info = json.loads((run / "info.json").read_text())
    assert info["config"]["scale"]["name"] == "smoke"
    assert info["compile_s"] > 0 and info["iterations"] == trace["iteration"].iloc[-1]
    assert info["environment"]["packages"]["jax"]
    assert info["environment"]["device"]["platform"] == "cpu"
    # the cores its experiment declares (E6's B = 1000: 2, the rest 1; --cores 2 gives them
    # all), pinned by a slot in the results folder
    cores = 2 if method == "advi_M1_B1000" else 1
    resources = info["resources"]
    assert resources["cores"] == cores and len(resources["cpu_ids"]) == cores
    assert resources["pinned_by"] == "slot" and resources["cpu_model"]
    with np.load(run / "posterior_mean.npz") as mean:
        assert mean["iteration"] == info["iterations"] and mean["num_draws"] >= 1
    if method.startswith("advi"):
        assert "elbo" in trace.columns and isinstance(info["converged"], bool)
    else:
        assert {"divergences", "accept_rate", "stop_reason"} <= set(info)
    assert "iteration" in (smoke / "results" / "logs" / "fit" / "smoke" / experiment / method
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


@pytest.fixture(scope="module")
def report(smoke):
    """The report of the smoke run, made as the README says (the workflow's --config)."""
    result = snakemake(smoke, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Missing metadata" not in result.stderr + result.stdout
    return smoke / "results" / "report.html"


def embedded_pages(report_html):
    """The report's HTML results, decoded: {path: text}."""
    results = json.loads(re.search(r"var results = (\{.*?\});\n", report_html, re.S).group(1))
    return {path: base64.b64decode(entry["data_uri"].split(",", 1)[1]).decode()
            for path, entry in results.items() if entry["data_uri"].startswith("data:text/html")}


def test_a_run_is_published_from_its_own_files(smoke, tmp_path):
    out = tmp_path / "published"
    page = publish_results.write_page(smoke / "results", out, "snakemake --cores 2",
                                      default_seeds=[0, 1, 2])
    text = page.read_text()
    figures = re.findall(r"!\[[^]]*\]\((figures/[^)]+)\)", text)
    assert {Path(f).stem for f in figures} >= {figure for figure, _, _ in EXPERIMENTS.values()}
    assert all((out / f).is_file() and Image.open(out / f).width <= 1000 for f in figures)
    claims = pd.read_csv(smoke / "results" / "claims.csv")
    assert all(f"| {claim} " in text for claim in claims["claim"])
    commit = json.loads((run_folder(smoke, "linreg_ard", "nuts") / "info.json").read_text())[
        "environment"]["git_commit"]
    assert f"`{commit}" in text and "hours** from the first fit's start" in text
    assert "Seeds: [0] (the default run: [0, 1, 2])" in text
    python = ".".join(platform.python_version_tuple()[:2])
    assert f"- **Lock file**: `locks/py{python}.txt`" in text
    assert (REPO_ROOT / "locks" / f"py{python}.txt").is_file()
    assert "**Machine load** (1-minute load average on" in text  # from the runs' info.json
    assert (out / "summaries" / "gmm_minibatch.csv").is_file()


def test_smoke_fits_ran_side_by_side_on_their_own_cpus(smoke):
    infos = [json.loads((run_folder(smoke, e, m) / "info.json").read_text()) for e, m in RUNS]
    assert max(info["resources"]["beside"] for info in infos) >= 1  # --cores 2: two at once
    assert len({info["resources"]["cpu_ids"][0] for info in infos}) == 2


def test_the_report_says_the_runs_are_smoke_runs_from_their_info_json(report):
    pages = embedded_pages(report.read_text())
    runs = next(text for path, text in pages.items() if path.endswith("runs.html"))
    assert "<b>smoke</b> scale" in runs and "<b>paper</b>" not in runs
    assert "S = 100 draws from q every 500 iterations" in runs  # E6's scoring, recorded
    assert "n_train 2,000" in runs  # E6's data size at smoke scale
    assert "ran on (first seed)" in runs and "(slot); beside" in runs  # cores, CPUs, company
    for name in ("claims.html", "summaries/gmm_minibatch.html"):
        page = next(text for path, text in pages.items() if path.endswith(name))
        assert "<b>smoke</b> scale" in page and "<table>" in page
    summary = next(text for path, text in pages.items() if path.endswith("gmm.html"))
    assert "Subset of 100 images" in summary  # E5's smoke size, not the paper's 1000


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_the_accuracy_figures_are_readable_on_the_smoke_traces(smoke, experiment):
    figure, methods, _ = EXPERIMENTS[experiment]
    traces = read_traces([run_folder(smoke, experiment, m) / "trace.csv" for m in methods])
    infos = [json.loads((run_folder(smoke, experiment, m) / "info.json").read_text())
             for m in methods]
    title = fill_title(conf_title(experiment), infos)
    fig = plot_accuracy.plot(traces, title=title, methods=list(methods))
    sizes = {"gmm": "Subset of 100 images", "gmm_minibatch": "Full dataset of 2,000 images"}
    assert_readable(fig, sizes.get(experiment, title))
    bottom, top = fig.axes[0].get_ylim()
    for method in methods:  # far off the axis is printed, not drawn: the rest stay apart
        final = traces[traces["method"] == method].sort_values("iteration")["heldout_lpd"].iloc[-1]
        if not bottom <= final <= top:
            side = "below" if final < bottom else "above"
            labels = [t.get_text() for t in fig.legends[0].get_texts()]
            assert any(f"final {final:.4g}, {side} the axis" in label for label in labels)


def test_the_report_builds_with_the_measured_numbers_in_the_captions(report):
    html = report.read_text()
    assert html.count("seconds_to_1pct_of_nuts") >= 5  # the captions' tables
    assert "seconds_to_1pct_of_advi_M1_B1000" in html
    assert "ADVI gets there fastest" in html  # the paper's claim for Figure 4b
    assert "simulated stand-in for the imageCLEF" in " ".join(html.replace("\\n", " ").split())
    assert "To use real images instead" in html  # the stand-in sample's caption
    assert "Gamma Poisson Factors" in html


def test_a_second_invocation_redoes_nothing(smoke):
    result = snakemake(smoke, "--cores", "1", "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_a_sweep_through_the_workflow_plans_distinct_runs(tmp_path):
    result = snakemake(tmp_path, "--dry-run", timeout=120, config=[
        "experiments=[linreg_ard]", 'overrides=["method=advi","method.grad_samples=1,10"]'])
    assert result.returncode == 0, result.stderr[-3000:]
    for method in ("advi_M1", "advi_M10"):
        assert f"results/runs/smoke/linreg_ard/{method}/seed0/trace.csv" in result.stdout
    assert "/nuts/" not in result.stdout


def test_the_fit_rule_hands_each_job_its_data_file_and_its_folder(tmp_path):
    result = snakemake(tmp_path, "--dry-run", "--printshellcmds", timeout=120, config=[
        "experiments=[linreg_ard]", 'overrides=["method=advi"]'])
    assert result.returncode == 0, result.stderr[-3000:]
    data = "results/data/simulated/linreg_ard/seed0_num_features10_num_heldout100_num_train500.npz"
    assert f"""'input_data="{data}"'""" in result.stdout  # quoted for Hydra, then the shell
    assert """'output_dir="results/runs/smoke/linreg_ard/advi_M1/seed0"'""" in result.stdout


@pytest.mark.skipif(screenshot_report.find_chromium() is None, reason="no Chromium installed")
@pytest.mark.parametrize("size", screenshot_report.SIZES)
def test_the_claims_table_spans_the_main_panel_in_a_browser(report, tmp_path, size):
    (shot,) = screenshot_report.screenshots(report, tmp_path, sizes=[size],
                                            views=["claims.html"])
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    header = np.all(pixels == HEADER_RGB, axis=2)  # the table's header row background
    columns = np.flatnonzero(header.any(axis=0))
    assert len(columns), "no table header in the screenshot"
    assert columns[-1] - columns[0] > 0.5 * pixels.shape[1]  # not squeezed into a sidebar


def test_offline_the_fetch_jobs_log_holds_the_error_naming_mirror_dir(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    proxy = "http://127.0.0.1:9"  # nothing listens there: every download fails at once
    offline = {**ENV, "http_proxy": proxy, "https_proxy": proxy, "no_proxy": "",
               "NO_PROXY": ""}
    result = snakemake(tmp_path, "--cores", "1", "--", "results/data/fetched/election88",
                       config=["experiments=[election88]", f'overrides=["mirror_dir={mirror}"]'],
                       timeout=120, env=offline)
    assert result.returncode != 0
    log = (tmp_path / "results" / "logs" / "fetch_data" / "election88.log").read_text()
    assert f"the mirror (mirror_dir) {mirror}/election88 lacks election88_full.csv" in log
    assert "could not download election88.data.json" in log
    assert "set mirror_dir to a folder that holds election88/" in log
    assert "--config 'overrides=[\"mirror_dir=/path/to/mirror\"]'" in log  # the form it used


def test_the_only_lint_is_the_per_rule_conda_environment_that_the_snakefile_explains(tmp_path):
    result = snakemake(tmp_path, "--lint", timeout=120)
    lints = re.findall(r"^    \* (.+):$", result.stdout + result.stderr, re.M)
    assert len(lints) >= 10  # one per rule that runs code
    assert set(lints) == {"Specify a conda environment or container for each rule."}
    assert "`snakemake --lint` asks for a conda environment per rule" in (
        REPO_ROOT / "Snakefile").read_text()


def dry_run_fit_threads(tmp_path, *config, cores="16"):
    """``{experiment/method: threads}`` of the fit jobs a paper-scale ``snakemake -n`` plans,
    and its output."""
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(tmp_path), "--config", "seeds=[0]", *config, "--cores", cores, "--dry-run"]
    result = subprocess.run(command, cwd=tmp_path, env=ENV, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    threads = {}
    for job in result.stdout.split("rule fit:")[1:]:
        head = job.split("\n\n")[0]
        name = re.search(r"runs/paper/([^/]+/[^/]+)/seed0/trace.csv", head).group(1)
        found = re.findall(r"threads: (\d+)", head)
        threads[name] = int(found[0]) if found else 1
    return threads, result.stdout + result.stderr


def test_paper_fits_run_side_by_side_on_the_cores_their_config_declares(tmp_path):
    threads, _ = dry_run_fit_threads(tmp_path)
    assert len(threads) >= 20  # every experiment's methods
    assert set(threads.values()) <= {1, 2, 4, 8}
    assert all(n <= 2 for name, n in threads.items() if not name.startswith("gmm_minibatch"))
    assert all(n <= 8 for name, n in threads.items() if name.startswith("gmm_minibatch"))
    assert threads["linreg_ard/nuts"] == 1
    assert threads["gmm_minibatch/advi_M1_B1000"] == 2  # measured: benchmarks/bench_cores.py


def test_a_run_declares_its_cores_in_the_hydra_config(tmp_path):
    threads, _ = dry_run_fit_threads(tmp_path, "experiments=[linreg_ard]",
                                     "overrides=[cores=2]", cores="4")
    assert set(threads.values()) == {2}
    fewer, _ = dry_run_fit_threads(tmp_path, "experiments=[linreg_ard]",
                                   "overrides=[cores=2]", cores="1")
    assert set(fewer.values()) == {1}  # Snakemake scales a job down to --cores
