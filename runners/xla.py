"""XLA settings of a run's process."""

from __future__ import annotations

import os

FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"
"""XLA's flag that turns off the backend's (LLVM's) optimisation passes."""


def fast_compile() -> str:
    """Compile every later XLA program of this process without backend optimisation.

    Measured on 2 CPU cores (JAX 0.10): NumPyro's NUTS set-up for E1 at smoke size 7.6 ->
    5.4 s, the minibatched mixture's ADVI iteration and ELBO functions 11.6 -> 6.2 CPU-s;
    the compiled code runs slower (E1's ADVI iterations about 2x). XLA reads ``XLA_FLAGS``
    when JAX first uses its backend, so this must run before the process's first JAX
    computation (:func:`runners.run.execute` calls it first).

    Returns:
        the ``XLA_FLAGS`` now set.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if FAST_COMPILE_FLAG not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {FAST_COMPILE_FLAG}".strip()
    return os.environ["XLA_FLAGS"]
