"""E1 and E2 at smoke scale through the SLURM profile (profiles/slurm) on a running SLURM
cluster: every fit is a SLURM job, sized from its run's config (rules/resources.smk).

Skipped where SLURM does not answer (``sbatch --version``, ``sinfo``). Marked ``slurm`` and
deselected by default (pyproject.toml); on one machine, as root:

    scripts/slurm_local.sh start
    python -m pytest -q -n 0 -m slurm tests/test_slurm.py
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from advi_repro.planning.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests"))
from test_workflow import EXPERIMENTS, run_folder, snakemake  # noqa: E402

TESTED = ("linreg_ard", "election88")
RUNS = [(e, m) for e in TESTED for m in EXPERIMENTS[e][1]]


def runtime_min(budget_s: float) -> int:
    """The wall time rules/resources.smk and docs/cluster.md state: twice the budget plus 15
    minutes, in minutes."""
    return math.ceil((2 * budget_s + 900) / 60)


def mem_mb(data_mb: float) -> int:
    """The memory they state: 2,000 MB plus four times the data's size on disk."""
    return math.ceil(2000 + 4 * data_mb)


def slurm_missing() -> str | None:
    """Why SLURM cannot run jobs here, or None when ``sbatch`` and ``sinfo`` answer."""
    for command in (["sbatch", "--version"], ["sinfo"]):
        try:
            subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
        except (OSError, subprocess.SubprocessError) as error:
            return (f"no SLURM cluster answers ({' '.join(command)}: {error}); start one with "
                    "scripts/slurm_local.sh start (docs/cluster.md)")
    return None


pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing())),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, real_data):
    """The workflow of E1 and E2, seed 0, at smoke scale, every job through the profile."""
    folder = tmp_path_factory.mktemp("slurm")
    result = snakemake(folder, "--profile", str(REPO_ROOT / "profiles" / "slurm"),
                       "--slurm-keep-successful-logs",
                       "--slurm-init-seconds-before-status-checks", "5",
                       config=[f"experiments={json.dumps(list(TESTED))}"])
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def slurm_job(workdir, experiment, method) -> dict[str, str]:
    """``scontrol show job`` of the fit's SLURM job (the id names the plugin's log of it)."""
    logs = list((workdir / ".snakemake" / "slurm_logs" / "rule_fit"
                 / f"smoke_{experiment}_{method}_0").glob("*.log"))
    assert len(logs) == 1, logs
    shown = subprocess.run(["scontrol", "show", "job", "--oneliner", logs[0].stem],
                           capture_output=True, text=True, timeout=30, check=True).stdout
    return dict(field.split("=", 1) for field in shown.split() if "=" in field)


def minutes(limit: str) -> int:
    """SLURM's ``[days-]hours:minutes:seconds`` in minutes."""
    days, _, clock = limit.rpartition("-")
    hours, mins, _ = (int(part) for part in clock.split(":"))
    return (int(days or 0) * 24 + hours) * 60 + mins


def data_size_mb(path: Path) -> float:
    """A data file's size in MB (10^6 bytes), or its folder's."""
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return sum(f.stat().st_size for f in files) / 1e6


@pytest.mark.parametrize(("experiment", "method"), RUNS)
def test_every_fit_ran_as_a_slurm_job_and_left_its_run(workdir, experiment, method):
    run = run_folder(workdir, experiment, method)
    trace = pd.read_csv(run / "trace.csv")
    info = json.loads((run / "info.json").read_text())
    assert info["status"] == "finished" and info["iterations"] == trace["iteration"].iloc[-1]
    assert (trace["experiment"] == experiment).all() and (trace["heldout_lpd"] < 0).all()
    job = slurm_job(workdir, experiment, method)
    assert job["JobState"] == "COMPLETED"
    assert Path(job["WorkDir"]) == workdir
    assert job["Comment"] == f"rule_fit_wildcards_smoke_{experiment}_{method}_0"
    # the fit itself saw the job: SLURM bound it to the CPUs it was given
    assert info["resources"]["pinned_by"] == "slurm"


@pytest.mark.parametrize(("experiment", "method"), RUNS)
def test_each_job_asked_for_what_its_run_config_declares(workdir, experiment, method):
    info = json.loads((run_folder(workdir, experiment, method) / "info.json").read_text())
    job = slurm_job(workdir, experiment, method)
    assert int(job["NumCPUs"]) == info["config"]["cores"]
    assert minutes(job["TimeLimit"]) == runtime_min(info["budget_s"])
    assert job["MinMemoryNode"] == f"{mem_mb(data_size_mb(workdir / info['data']['path']))}M"
    assert "gres/gpu" not in job.get("TRES", "")  # no GPU unless asked (config gpus=N)


def test_the_figures_and_summaries_are_made_from_the_slurm_runs(workdir):
    for experiment in TESTED:
        figure, methods, _ = EXPERIMENTS[experiment]
        assert (workdir / "results" / "figures" / f"{figure}.png").stat().st_size > 10_000
        summary = pd.read_csv(workdir / "results" / "summaries" / f"{experiment}.csv")
        assert list(summary["method"]) == list(methods)
