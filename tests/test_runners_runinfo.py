"""What a run's seconds were measured on and the code that made it, as the report and the
claims read them."""

import importlib.metadata
import shutil
import subprocess

from advi_repro.analysis.runinfo import (
    code_note,
    describe_resources,
    other_code,
    same_code,
    timing_setup,
)
from advi_repro.planning.paths import REPO_ROOT
from advi_repro.planning.rerun import code_version

INFO = {"environment": {"device": {"platform": "cpu", "kind": "cpu", "count": 1}},
        "resources": {"cores": 1, "cpu_ids": [3], "pinned_by": "slot", "beside": 1,
                      "host": "node1", "cpu_model": "Xeon 8481C"}}


def test_cpu_runs_are_told_apart_by_cores_and_model_and_gpus_by_device():
    assert timing_setup(INFO) == "cpu, 1 x Xeon 8481C"
    two = {**INFO, "resources": {**INFO["resources"], "cores": 2, "cpu_ids": [0, 1]}}
    assert timing_setup(two) != timing_setup(INFO)
    gpu = {**INFO, "environment": {"device": {"platform": "gpu", "kind": "NVIDIA H100"}}}
    assert timing_setup(gpu) == "gpu NVIDIA H100 (host: 1 x Xeon 8481C)"
    assert timing_setup({"environment": INFO["environment"]}) is None


def test_the_runs_page_line_names_cpus_pinning_and_company():
    assert describe_resources(INFO) == "cpu, 1 x Xeon 8481C; CPUs 3 (slot); beside 1 fit"
    free = {**INFO, "resources": {**INFO["resources"], "cpu_ids": None, "beside": 0}}
    assert describe_resources(free).endswith("not pinned; beside 0 fits")
    assert describe_resources({}) == "not recorded"


def test_a_busy_host_is_named_on_the_runs_page():
    busy = {**INFO, "resources": {**INFO["resources"], "max_load": 9.5}}
    assert describe_resources(busy).endswith("beside 1 fit; load up to 9.5")


# ---- the code that made a run (planning/rerun.py, analysis/runinfo.py) ----------------------

CHECKOUT = {"git_commit": "a" * 40, "git_dirty": False, "version": "0.1.0"}


def made_by(commit, dirty=False, version="0.1.0"):
    """An info.json whose run was made by this code."""
    return {"experiment": "linreg_ard", "method": "advi_M1", "seed": 0,
            "environment": {"git_commit": commit, "git_dirty": dirty,
                            "packages": {"advi-repro": version}}}


def test_a_checkout_records_its_commit_and_elsewhere_none(tmp_path):
    here = code_version()
    if (REPO_ROOT / ".git").exists() and shutil.which("git"):
        assert len(here["git_commit"]) == 40 and isinstance(here["git_dirty"], bool)
    assert here["version"] == importlib.metadata.version("advi-repro")
    outside = code_version(tmp_path)  # not a git checkout
    assert outside["git_commit"] is None and outside["git_dirty"] is None
    assert outside["version"] == here["version"]
    if shutil.which("git"):
        (tmp_path / "inner").mkdir()
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        assert code_version(tmp_path / "inner")["git_commit"] is None  # inside, not its top


def test_runs_by_another_commit_are_named_with_both_commits():
    assert same_code(made_by("a" * 40), CHECKOUT) is True
    assert other_code(made_by("a" * 40), CHECKOUT) is None
    assert other_code(made_by("b" * 40), CHECKOUT) == (
        f"made by code at {'b' * 12}, not this checkout's {'a' * 12}")
    assert same_code(made_by("a" * 40, dirty=True), CHECKOUT) is None  # cannot tell
    assert "uncommitted changes" in other_code(made_by("a" * 40, dirty=True), CHECKOUT)
    outside = {"git_commit": None, "git_dirty": None, "version": "0.1.0"}
    assert same_code(made_by(None, None), outside) is True
    assert same_code(made_by(None, None, "0.0.9"), outside) is False
    assert "an unknown commit (advi-repro 0.0.9)" in other_code(made_by(None, None, "0.0.9"),
                                                                outside)


def test_the_runs_page_note_lists_the_runs_by_other_code_and_how_to_redo_them():
    assert code_note([made_by("a" * 40)], CHECKOUT) is None
    note = code_note([made_by("a" * 40), made_by("b" * 40)], CHECKOUT)
    assert "1 of 2 runs were made by code other than this checkout's" in note
    assert "linreg_ard advi_M1 seed 0" in note and "--forcerun fit" in note
    unsure = code_note([made_by("a" * 40, dirty=True)], CHECKOUT)
    assert "cannot be told" in unsure and "other than" not in unsure
