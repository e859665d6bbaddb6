"""A new experiment is a model module and a YAML file, nothing else (docs/own-model.md).

The test builds the worked example of docs/own-model.md, a Poisson regression that is not in
the paper, on simulated data and on a CSV file of one's own, from the page itself: it copies
the repository's workflow and packages into a temporary folder, adds the page's files to the
copy, and runs the page's commands in it as written (smoke scale). The copy is made
importable as ``advi_repro``, as ``pip install -e`` of the copy would make it: links in its
``advi_repro/`` to its package folders, and the copy first on PYTHONPATH. The library
``advi`` is the installed one."""

import json
import os
import re
import shlex
import shutil
import subprocess

import pandas as pd
import pytest

from advi_repro.planning.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "own-model.md"
COPIED = ("Snakefile", "rules", "conf", "scripts", "report", "models", "runners", "planning",
          "analysis", "advi_repro")
PACKAGES = ("models", "runners", "planning", "analysis")  # advi_repro.<name>: pyproject
PAGE_EXPERIMENTS = ("poisson_regression", "poisson_regression_csv")

def page_files():
    """``{path: text}`` of the files the page adds: each a fenced block after a line that
    names its path (`models/<model>.py`:)."""
    blocks = re.findall(r"^`([\w/.]+\.(?:py|yaml))`:\n\n```\w+\n(.*?)^```$", PAGE.read_text(),
                        re.M | re.S)
    return dict(blocks)


def page_commands():
    """The page's shell commands (its ```bash blocks), one per line."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", PAGE.read_text(), re.M | re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def importable(copy):
    """The copy's ``advi_repro`` package with its subpackages in it (links to its folders, as
    pyproject.toml's package-dir maps them), importable with the copy on PYTHONPATH."""
    for name in PACKAGES:
        (copy / "advi_repro" / name).symlink_to(copy / name, target_is_directory=True)


@pytest.fixture(scope="module")
def own_experiment(tmp_path_factory):
    """The copy's results, after the page's files were added to it and its commands ran."""
    folder = tmp_path_factory.mktemp("own_model")
    copy = folder / "repo"
    copy.mkdir()
    for name in COPIED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / name)
    added = page_files()
    assert sorted(added) == ["conf/experiment/poisson_regression.yaml",
                             "conf/experiment/poisson_regression_csv.yaml",
                             "models/poisson_regression.py"]
    for path, text in added.items():
        assert not (copy / path).exists()  # new files, not edits
        (copy / path).write_text(text)
    importable(copy)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    for command in page_commands():
        result = subprocess.run(shlex.split(command), cwd=copy, env=env, capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    return copy / "results"


def test_the_page_adds_a_model_module_and_yamls_and_runs_the_workflow():
    assert [path.split("/")[0] for path in page_files()] == ["models", "conf", "conf"]
    assert [shlex.split(c)[0] for c in page_commands()] == [
        "snakemake", "snakemake", "python", "snakemake"]  # python: makes counts.csv


def test_the_figure_and_the_summary_come_out(own_experiment):
    for ext in ("png", "pdf"):
        assert (own_experiment / "figures" / f"poisson_regression.{ext}").stat().st_size > 10_000
    summary = pd.read_csv(own_experiment / "summaries" / "poisson_regression.csv")
    assert list(summary["method"]) == ["advi_M1", "nuts", "hmc"]
    assert summary["final_heldout_lpd"].lt(0).all()  # log densities of counts
    assert "seconds_to_1pct_of_nuts" in summary.columns
    runs = own_experiment / "runs" / "smoke"
    assert sorted(str(p.relative_to(runs)) for p in runs.glob("*/*/seed0")) == [
        f"{experiment}/{method}/seed0" for experiment in PAGE_EXPERIMENTS
        for method in ("advi_M1", "hmc", "nuts")]  # the new experiments' runs only


def test_the_claims_table_has_a_no_paper_claim_row_for_each(own_experiment):
    claims = pd.read_csv(own_experiment / "claims.csv", keep_default_na=False)
    rows = claims[claims["claim"] == "none"].set_index("experiment")
    assert list(rows.index) == list(PAGE_EXPERIMENTS)
    assert set(rows["held"]) == {"no paper claim"}
    assert rows["measured"].str.startswith("final heldout_lpd: ADVI (M=1) -").all()
    assert list(rows["data"]) == ["simulate poisson_regression", "file counts.csv"]
    paper = claims[claims["claim"] != "none"]
    assert set(paper.loc[paper["claim"] != "E0", "held"]) == {"not run"}


def test_the_csv_of_ones_own_is_split_by_the_yaml_and_read_where_it_is(own_experiment):
    run = own_experiment / "runs" / "smoke" / "poisson_regression_csv" / "nuts" / "seed0"
    data = json.loads((run / "info.json").read_text())["data"]
    assert data["path"] == "counts.csv" and data["source"] == "counts.csv"
    assert (data["n_train"], data["n_heldout"]) == (800, 200)  # simulate(1)'s 1,000 rows
    assert data["arguments"] == {"X": [5], "y": []}
    summary = pd.read_csv(own_experiment / "summaries" / "poisson_regression_csv.csv")
    assert summary["final_heldout_lpd"].lt(0).all()


def test_the_model_page_and_the_report_come_out(own_experiment):
    page = (own_experiment / "models" / "poisson_regression.html").read_text()
    assert "models/poisson_regression.py" in page and "poisson_regression.model" in page
    report = (own_experiment / "report.html").read_text()
    assert "poisson_regression" in report and "a model\\nthat is not in the paper" in report
