"""Real interrupts of scripts/fit.py: a rerun of a finished run stopped by Ctrl-C (SIGINT)
stops at its next checkpoint, leaves the finished run whole and keeps its own apart, under a
name that says so; a fit whose workflow is killed stops too rather than running on alone."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from advi_repro.planning.paths import REPO_ROOT, run_dir

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed
# E1 at smoke scale with ADVI: finished in seconds; LONG makes a rerun run for minutes.
QUICK = ["experiment=linreg_ard", "method=advi", "scale=smoke"]
LONG = ["method.tol_rel_obj=1e-9", "method.max_iter=10000000", "budget_s=600"]

def fit(results_dir, *overrides):
    """scripts/fit.py as a child process, writing under ``results_dir``."""
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "scripts" / "fit.py"), *QUICK,
         f"results_dir={results_dir}", *overrides],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_checkpoint(folder, child, timeout=120):
    """Waits until a run being written beside ``folder`` has its first trace row."""
    deadline = time.monotonic() + timeout
    while not list(folder.parent.glob(f".{folder.name}.running-*/trace.csv")):
        assert child.poll() is None, child.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within the timeout"
        time.sleep(0.2)


def snapshot(folder):
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A finished run, then a rerun of it interrupted with SIGINT after its first checkpoint:
    (the run's folder, its files before the rerun, the rerun's exit status, its output)."""
    results = tmp_path_factory.mktemp("interrupt") / "results"
    folder = run_dir(results, "smoke", "linreg_ard", "advi_M1", 0)
    first = fit(results)
    output = first.communicate(timeout=300)[0]
    assert first.returncode == 0, output[-3000:]
    assert re.search(r"done: \d+ iterations; wall-clock [\d.]+ s = [\d.]+ s compiling \+ "
                     r"[\d.]+ s inference \(the clock\) \+ [\d.]+ s scoring", output), output
    first_output = output
    before = snapshot(folder)
    rerun = fit(results, *LONG)
    wait_for_checkpoint(folder, rerun)
    sent = time.monotonic()
    rerun.send_signal(signal.SIGINT)
    output = rerun.communicate(timeout=120)[0]
    return folder, before, rerun.returncode, output, time.monotonic() - sent, first_output


def test_the_finished_run_is_intact_after_an_interrupted_rerun(interrupted):
    folder, before, returncode, output, _, _ = interrupted
    assert returncode == 130, output[-3000:]
    assert snapshot(folder) == before
    info = json.loads(before["info.json"])
    assert info["status"] == "finished" and info["checkpoint_s"] > 0
    assert info["compile_s"] + info["wall_s"] + info["checkpoint_s"] < info["total_s"]


def test_the_fit_log_shows_compilation_and_each_checkpoint_without_library_chatter(
        interrupted):
    folder, before, _, _, _, output = interrupted
    lines = output.splitlines()
    compiling = [i for i, line in enumerate(lines) if line.endswith(
        "advi INFO compiling the start, iteration and ELBO functions ...")]
    assert compiling and re.search(r"advi INFO compiled in \d+\.\d s$", lines[compiling[0] + 1])
    checkpoints = [line for line in lines if "checkpoint at iteration" in line]
    assert len(checkpoints) == json.loads(before["info.json"])["checkpoints"]
    # no record of JAX's own loggers (the library's warnings may name jax.config)
    assert not [line for line in lines
                if "preview" in line or re.search(r" jax(\.\w+)* [A-Z]+ ", line)], output
    assert not [line for line in lines if "INFO" in line and not re.search(
        r" (advi_repro\.runners\.\w+|advi|fit) INFO ", line)], output


def test_the_interrupted_rerun_stops_at_its_next_checkpoint_and_is_kept_as_partial(interrupted):
    folder, _, _, output, seconds, _ = interrupted
    assert seconds < 30  # a checkpoint away, not the 600-s budget
    partial = folder.with_name("seed0.partial")
    info = json.loads((partial / "info.json").read_text())
    assert info["status"] == "interrupted by SIGINT" and info["checkpoints"] >= 1
    assert info["iterations"] == 100 * info["checkpoints"]  # ADVI: a checkpoint per 100
    trace = (partial / "trace.csv").read_text().splitlines()
    assert len(trace) == 1 + info["checkpoints"]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["seed0", "seed0.partial"]
    assert "SIGINT received: stopping at the next checkpoint" in output
    assert f"interrupted by SIGINT: stopped at iteration {info['iterations']}" in output
    assert f"kept in {partial}" in output and "Traceback" not in output


def test_a_fit_whose_workflow_is_killed_stops_and_keeps_its_run(tmp_path):
    """SIGKILL to Snakemake: its fit job gets SIGTERM
    (advi_repro.runners.interrupt.die_with_parent)."""
    command = ["snakemake", "--snakefile", str(REPO_ROOT / "Snakefile"), "--directory",
               str(tmp_path), "--cores", "1", "--config", "scale=smoke", "seeds=[0]",
               "experiments=[linreg_ard]",
               f"overrides={json.dumps(['method=advi', *LONG])}",
               "--", "results/runs/smoke/linreg_ard/advi_M1/seed0/trace.csv"]
    workflow = subprocess.Popen(command, cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    folder = run_dir(tmp_path / "results", "smoke", "linreg_ard", "advi_M1", 0)
    wait_for_checkpoint(folder, workflow, timeout=300)
    workflow.kill()
    workflow.wait()
    info_path = folder.with_name("seed0.partial") / "info.json"
    deadline = time.monotonic() + 60
    while not info_path.exists():
        assert time.monotonic() < deadline, "the orphaned fit did not stop within 60 s"
        time.sleep(0.2)
    assert json.loads(info_path.read_text())["status"] == "interrupted by SIGTERM"
