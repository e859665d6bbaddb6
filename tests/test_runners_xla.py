"""The smoke scale's fast compilation: the flag is set once, and early enough to count."""

import os
import subprocess
import sys

from planning.paths import REPO_ROOT
from runners.xla import FAST_COMPILE_FLAGS, fast_compile


def test_fast_compile_adds_the_flags_once_and_keeps_the_others(monkeypatch):
    ours = " ".join(FAST_COMPILE_FLAGS)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert fast_compile() == f"--xla_cpu_enable_fast_math=false {ours}"
    assert fast_compile() == f"--xla_cpu_enable_fast_math=false {ours}"
    monkeypatch.setenv("XLA_FLAGS", FAST_COMPILE_FLAGS[1])
    assert fast_compile() == f"{FAST_COMPILE_FLAGS[1]} {FAST_COMPILE_FLAGS[0]}"
    monkeypatch.delenv("XLA_FLAGS")
    assert fast_compile() == ours


def test_the_fast_compile_flags_are_flags_xla_knows():
    # an unknown flag stops XLA when it starts (see the test below)
    env = {**os.environ, "XLA_FLAGS": " ".join(FAST_COMPILE_FLAGS)}
    out = subprocess.run([sys.executable, "-c", "import jax.numpy as jnp; print(jnp.ones(1) + 1)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_importing_what_a_run_imports_leaves_xla_unstarted():
    # XLA reads XLA_FLAGS once, when JAX first uses its backend: a flag set after a run's
    # imports (runners.run.execute sets it) still counts only if no import computed
    # anything with JAX. An unknown flag set at that point must therefore stop XLA.
    code = ("import os, sys; sys.argv = ['fit.py'];"
            "import runners.run, planning.cli, planning.config, runners.interrupt, hydra;"
            "planning.config.register();"
            "os.environ['XLA_FLAGS'] = '--xla_no_such_flag_for_this_test';"
            "import jax.numpy as jnp; print(jnp.ones(1) + 1)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "Unknown flag in XLA_FLAGS: --xla_no_such_flag_for_this_test" in out.stderr
