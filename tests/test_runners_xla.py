"""The smoke scale's fast compilation: the flag is set once, and early enough to count."""

import os
import subprocess
import sys

from runners.paths import REPO_ROOT
from runners.xla import FAST_COMPILE_FLAG, fast_compile


def test_fast_compile_adds_the_flag_once_and_keeps_the_others(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert fast_compile() == f"--xla_cpu_enable_fast_math=false {FAST_COMPILE_FLAG}"
    assert fast_compile() == f"--xla_cpu_enable_fast_math=false {FAST_COMPILE_FLAG}"
    monkeypatch.delenv("XLA_FLAGS")
    assert fast_compile() == FAST_COMPILE_FLAG


def test_importing_what_a_run_imports_leaves_xla_unstarted():
    # XLA reads XLA_FLAGS once, when JAX first uses its backend: a flag set after a run's
    # imports (runners.run.execute sets it) still counts only if no import computed
    # anything with JAX. An unknown flag set at that point must therefore stop XLA.
    code = ("import os, sys; sys.argv = ['fit.py'];"
            "import runners.run, runners.cli, runners.config, runners.interrupt, hydra;"
            "runners.config.register();"
            "os.environ['XLA_FLAGS'] = '--xla_no_such_flag_for_this_test';"
            "import jax.numpy as jnp; print(jnp.ones(1) + 1)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "Unknown flag in XLA_FLAGS: --xla_no_such_flag_for_this_test" in out.stderr
