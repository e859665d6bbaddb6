"""One installation, two checkouts: every part of the workflow reads the ``conf/`` of the
checkout it runs in.

The second checkout is a copy of this one's tracked files (a clone of another branch, a
``git worktree``) with one experiment YAML more; the packages it imports are this
checkout's installation, as they are for a user with one environment and two clones. Its
new experiment must be a choice of its ``scripts/fit.py``, in the plan of its
``scripts/plan.py`` and of its Snakefile, and fit."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from advi_repro.planning.paths import REPO_ROOT

NEW = "my_regression"

def tracked_files():
    """This checkout's tracked files (``git ls-files``), as a clone of it holds them."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True,
                                check=True, timeout=60).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout to clone")
    return [path for path in listed.split("\0") if path and (REPO_ROOT / path).is_file()]


@pytest.fixture(scope="module")
def second(tmp_path_factory):
    """The second checkout: this one's tracked files and ``conf/experiment/my_regression.yaml``
    (E1's model and data under another name, figure and no paper claim)."""
    clone = tmp_path_factory.mktemp("second") / "clone"
    for path in tracked_files():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / path, clone / path)
    text = (clone / "conf" / "experiment" / "linreg_ard.yaml").read_text()
    for old, new in (("\nname: linreg_ard\n", f"\nname: {NEW}\n"),
                     ("\nfigure: fig4a_linreg_ard\n", f"\nfigure: {NEW}\n"),
                     ("\nclaim_id: E1\n", "\nclaim_id: null\n")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (clone / "conf" / "experiment" / f"{NEW}.yaml").write_text(text)
    assert not (REPO_ROOT / "conf" / "experiment" / f"{NEW}.yaml").exists()
    return clone


def run(clone, *command):
    """``command`` run in ``clone`` with this checkout's installation (never the clone's
    packages: no PYTHONPATH), its output; fails the test on a non-zero exit."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def test_the_new_experiment_is_a_choice_of_the_second_checkouts_fit(second):
    help_text = run(second, sys.executable, "scripts/fit.py", "--help")
    line = next(line for line in help_text.splitlines() if line.startswith("  experiment="))
    assert f"linreg_ard, {NEW}" in line


def test_the_new_experiment_fits_from_the_second_checkout(second, tmp_path):
    run(second, sys.executable, "scripts/fit.py", f"experiment={NEW}", "method=advi",
        "scale=smoke", f"results_dir={tmp_path}")
    folder = tmp_path / "runs" / "smoke" / NEW / "advi_M1" / "seed0"
    info = json.loads((folder / "info.json").read_text())
    assert info["status"] == "finished"
    assert info["config"]["experiment"]["name"] == NEW
    assert len((folder / "trace.csv").read_text().splitlines()) > 2  # header and checkpoints


def test_the_second_checkouts_plan_and_workflow_run_the_new_experiment(second):
    plan = run(second, sys.executable, "scripts/plan.py", "--seeds", "0", "--cores", "2")
    assert f"{NEW}/advi_M1" in plan and "linreg_ard/advi_M1" in plan
    dry = run(second, "snakemake", "-n", "--cores", "1", "--config", "scale=smoke",
              "seeds=[0]", f"experiments=[{NEW}]")
    assert f"results/runs/smoke/{NEW}/advi_M1/seed0/info.json" in dry
    assert f"results/figures/{NEW}.png" in dry
