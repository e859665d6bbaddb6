"""XLA settings of a run's process."""

from __future__ import annotations

import os

FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
"""XLA's flags that turn off the backend's (LLVM's) optimisation passes, and that pick the
CPU backend's older elemental emitters over its MLIR fusion emitters (see
:mod:`advi.xla_options`; a CPU flag, ignored by a GPU)."""


def fast_compile() -> str:
    """Compile every later XLA program of this process fast, to run slower.

    Measured on 2 CPU cores (JAX 0.10), at smoke scale: NumPyro's NUTS set-up for E1 7.6 ->
    5.4 s without backend optimisation, the minibatched mixture's ADVI iteration and ELBO
    functions 11.6 -> 6.2 CPU-s; NUTS's compilation then 3.0 -> 1.9 s (E1) and 3.1 -> 1.8 s
    (the Gamma-Poisson factorisation) with the older emitters too. The compiled code runs
    slower (E1's ADVI iterations about 2x; a scatter, as election88's gradient has, runs as
    a serial loop). XLA reads ``XLA_FLAGS`` when JAX first uses its backend, so this must
    run before the process's first JAX computation (:func:`runners.run.execute` calls it
    first).

    Returns:
        the ``XLA_FLAGS`` now set.
    """
    flags = os.environ.get("XLA_FLAGS", "").split()
    flags += [flag for flag in FAST_COMPILE_FLAGS if flag not in flags]
    os.environ["XLA_FLAGS"] = " ".join(flags)
    return os.environ["XLA_FLAGS"]
