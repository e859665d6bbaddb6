"""Reruns you can trust: after a run, a change to a setting that changes a run's result (a
conf/ YAML default, an experiment's method list, the data's sizes) replans exactly the runs
it changes, and what reads them; an unchanged config, or a change to a setting that does not
change results (cores, mirror_dir, the text of the overrides), replans nothing.

The workflow runs from a temporary copy of the repository's Snakefile, rules/, conf/,
scripts/ and report/ (the workflow composes the conf/ beside its Snakefile), so the test
edits the copy's YAML files, never the repository's."""

import contextlib
import html
import json
import os
import re
import shutil
import subprocess

import pytest

from advi_repro.planning.paths import REPO_ROOT
from advi_repro.planning.rerun import DISTRIBUTION, config_sha256, result_settings
from advi_repro.planning.workflow import plan_workflow

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed
SWEEP = ["method=advi", "method.grad_samples=1,10"]
RUNS = {m: f"results/runs/smoke/linreg_ard/{m}/seed0" for m in ("advi_M1", "advi_M10")}
TRACES = [f"{run}/trace.csv" for run in RUNS.values()]
SUMMARY = "results/summaries/linreg_ard.csv"

def snakemake(workflow, overrides=SWEEP, *args, targets=(SUMMARY,), work=None):
    """The copy's workflow at smoke scale, E1, seed 0, with these Hydra overrides, in
    ``work`` (default: the fixture's working directory)."""
    work = work or workflow / "work"
    command = ["snakemake", "--snakefile", str(workflow / "repo" / "Snakefile"), "--directory",
               str(work), "--config", "scale=smoke", "seeds=[0]", "experiments=[linreg_ard]",
               f"overrides={json.dumps(list(overrides))}", *args, "--", *targets]
    result = subprocess.run(command, cwd=work, env=ENV, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout + result.stderr


def planned(workflow, overrides=SWEEP, targets=(SUMMARY,)):
    """``{(rule, first output): reason}`` of the jobs a dry run plans (checked against
    its job count, or its "Nothing to be done")."""
    text = snakemake(workflow, overrides, "--dry-run", targets=targets)
    jobs = re.finditer(r"^rule (\w+):\n(?:    .*\n)*?    output: ([^,\n]+).*\n(?:    .*\n)*?"
                       r"    reason: (.*)$", text, re.M)
    found = {(job[1], job[2]): job[3] for job in jobs}
    total = re.search(r"^total +(\d+)$", text, re.M)
    assert (int(total[1]) if total else 0) == len(found), text[-3000:]
    assert bool(found) != ("Nothing to be done" in text), text[-3000:]
    return found


@contextlib.contextmanager
def edited(path, old, new):
    """``path`` with ``old`` replaced by ``new``, restored afterwards."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))
    try:
        yield
    finally:
        path.write_text(text)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    """The E1 ADVI runs M = 1 and M = 10 and their summary, made from a copy of the
    workflow's files: ``<folder>/repo`` (Snakefile, rules/, conf/, scripts/, report/) and
    ``<folder>/work``, the working directory."""
    folder = tmp_path_factory.mktemp("reruns")
    (folder / "repo").mkdir()
    shutil.copy2(REPO_ROOT / "Snakefile", folder / "repo" / "Snakefile")
    for name in ("rules", "conf", "scripts", "report"):
        shutil.copytree(REPO_ROOT / name, folder / "repo" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "work").mkdir()
    snakemake(folder, SWEEP, "--cores", "2")
    return folder


def test_an_unchanged_config_plans_nothing(workflow):
    assert planned(workflow) == {}


def test_settings_that_do_not_change_results_redo_no_run(workflow):
    mirror = workflow / "mirror"
    assert planned(workflow, [*SWEEP, "cores=2", f"mirror_dir={mirror}"]) == {}
    # another spelling of the same settings
    assert planned(workflow, ["method.grad_samples=1,10", "method=advi"]) == {}
    # a key only the report reads: the summary, which shows the title, not the runs
    with edited(workflow / "repo" / "conf" / "experiment" / "linreg_ard.yaml",
                "title: Linear Regression with ARD", "title: Linear regression"):
        assert set(planned(workflow)) == {("summarise", SUMMARY)}


def test_a_changed_yaml_default_replans_the_runs_it_changes_and_what_reads_them(workflow):
    advi = workflow / "repo" / "conf" / "method" / "advi.yaml"
    with edited(advi, "grad_samples: 1\n", "grad_samples: 1\ntol_rel_obj: 0.001\n"):
        jobs = planned(workflow)
    fits = {("fit", trace): "Params have changed" for trace in TRACES}
    assert {job: reason.split(" since")[0] for job, reason in jobs.items()
            if job[0] == "fit"} == fits
    assert set(jobs) == {*fits, ("summarise", SUMMARY)}  # not the data
    assert planned(workflow) == {}  # restored: the recorded hash again


def test_a_change_to_one_run_replans_that_run_alone(workflow):
    experiment = workflow / "repo" / "conf" / "experiment" / "linreg_ard.yaml"
    with edited(experiment, "[method=advi, method.grad_samples=10]",
                "[method=advi, method.grad_samples=10, method.tol_rel_obj=0.001]"):
        assert set(planned(workflow, [], targets=TRACES)) == {("fit", TRACES[1])}
        # the workflow's method=advi replaces the experiment's list: nothing changed
        assert planned(workflow) == {}
    assert set(planned(workflow, [*SWEEP, "method.eval_draws=50"])) == {
        *(("fit", trace) for trace in TRACES), ("summarise", SUMMARY)}


def test_changed_data_sizes_replan_the_data_and_its_runs(workflow):
    experiment = workflow / "repo" / "conf" / "experiment" / "linreg_ard.yaml"
    with edited(experiment, "num_train: 500,", "num_train: 400,"):
        rules = sorted(rule for rule, _ in planned(workflow))
    assert rules == ["fit", "fit", "simulate_data", "summarise"]


def test_info_json_records_the_code_and_the_hash_the_plan_compares(workflow):
    plan = plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                         overrides=SWEEP, conf_dir=workflow / "repo" / "conf")
    hashes = {run.method: run.config_sha256 for run in plan.runs}
    assert len(set(hashes.values())) == 2
    for method, run in RUNS.items():
        info = json.loads((workflow / "work" / run / "info.json").read_text())
        assert info["config_sha256"] == hashes[method]  # fit.py composes what the plan did
        environment = info["environment"]
        assert environment["packages"][DISTRIBUTION]
        assert {"git_commit", "git_dirty"} <= set(environment)


def test_the_runs_page_marks_runs_made_by_code_other_than_the_checkouts(workflow, tmp_path):
    work = tmp_path / "work"  # a copy: the runs' info.json are edited
    shutil.copytree(workflow / "work", work)
    page = work / "results" / "runs.html"
    snakemake(workflow, SWEEP, "--cores", "1", targets=["results/runs.html"], work=work)
    assert "not this checkout's" not in page.read_text()
    info = work / RUNS["advi_M10"] / "info.json"
    edited_info = json.loads(info.read_text())
    edited_info["environment"].update(git_commit="0" * 40, git_dirty=False)
    info.write_text(json.dumps(edited_info))
    snakemake(workflow, SWEEP, "--cores", "1", targets=["results/runs.html"], work=work)
    text = html.unescape(page.read_text())
    assert "1 of 2 runs were made by code other than this checkout's" in text
    assert f"made by code at {'0' * 12}, not this checkout's" in text
    assert "--forcerun fit" in text


# ---- the hash itself (planning/rerun.py) ---------------------------------------------------

CONFIG = {"seed": 0, "budget_s": 3.0, "results_dir": "results", "mirror_dir": None, "cores": 1,
          "data": {"image_dir": None}, "scale": {"name": "smoke", "eval_draws": 100},
          "method": {"preset": "stan", "grad_samples": 1, "tol_rel_obj": None},
          "experiment": {"name": "linreg_ard", "model": "linreg_ard", "title": "E1",
                         "methods": [["method=advi"]], "data": {"source": "simulate"},
                         "scales": {"smoke": {"budget_s": 3.0}, "paper": {"budget_s": 1800}}}}


def changed(path, value):
    """A copy of :data:`CONFIG` with the key at ``path`` (dotted) set to ``value``."""
    config = json.loads(json.dumps(CONFIG))
    *parents, key = path.split(".")
    node = config
    for parent in parents:
        node = node[parent]
    node[key] = value
    return config


@pytest.mark.parametrize(("path", "value"), [
    ("results_dir", "elsewhere"), ("mirror_dir", "/mirror"), ("cores", 4),
    ("experiment.title", "Another"), ("experiment.methods", [["method=nuts"]]),
    ("experiment.scales.paper.budget_s", 60), ("method.family", None)])
def test_what_does_not_change_results_does_not_change_the_hash(path, value):
    assert config_sha256(changed(path, value)) == config_sha256(CONFIG)


@pytest.mark.parametrize(("path", "value"), [
    ("seed", 1), ("budget_s", 4.0), ("method.tol_rel_obj", 0.001), ("scale.eval_draws", 50),
    ("experiment.scales.smoke.budget_s", 4.0), ("data.image_dir", "/images"),
    ("experiment.data.source", "fetch")])
def test_what_changes_results_changes_the_hash(path, value):
    assert config_sha256(changed(path, value)) != config_sha256(CONFIG)


def test_the_settings_keep_the_runs_own_scale_alone():
    settings = result_settings(CONFIG)
    assert settings["experiment"]["scales"] == {"smoke": {"budget_s": 3.0}}
    assert "cores" not in settings and "tol_rel_obj" not in settings["method"]
    assert len(config_sha256(CONFIG)) == 16
