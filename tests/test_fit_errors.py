"""scripts/fit.py's errors: one clear line, or the traceback with HYDRA_FULL_ERROR=1."""

import os
import subprocess
import sys

import pytest

from advi_repro.planning.paths import REPO_ROOT

ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed


def fit(tmp_path, *overrides, **env):
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "fit.py"), "scale=smoke",
         f"results_dir={tmp_path}", *overrides],
        env={**ENV, **env}, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("overrides", "line"), [
    (["method.grad_samples=0"],
     "error: ValueError: AdviConfig.grad_samples = 0: must be an integer >= 1"),
    (["experiment=gmm", "data.image_dir=/no/such/images"],
     "error: FileNotFoundError: image folder /no/such/images does not exist"),
    (["experiment=nope"],  # Hydra's own report of an unknown choice is a dozen lines
     "error: ValueError: experiment='nope' is not a choice; experiment is one of: "
     "dirichlet_exponential_nmf, election88,"),
    (["-m", "method=advi,nutz"],
     "error: ValueError: method='nutz' is not a choice; method is one of: advi, advi_robust"),
])
def test_an_error_is_one_line_naming_the_value(tmp_path, overrides, line):
    result = fit(tmp_path, *overrides)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(line) and last.endswith("(HYDRA_FULL_ERROR=1 shows where)")
    assert "Traceback" not in result.stderr + result.stdout


def test_hydra_full_error_gives_the_traceback(tmp_path):
    result = fit(tmp_path, "method.grad_samples=0", HYDRA_FULL_ERROR="1")
    assert result.returncode == 1 and "Traceback" in result.stderr
    assert "grad_samples = 0" in result.stderr
