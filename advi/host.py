"""The host's share of a fit: NumPy and SciPy linear algebra on one BLAS thread.

Beside the compiled programs (XLA's own thread pool), a fit runs NumPy and SciPy on the
host: the Laplace start's L-BFGS (SciPy's L-BFGS-B, whose BLAS calls are on K-vectors and
2m x 2m matrices), its whitening (a K x K matrix-vector product at each evaluation), the
Cholesky factors and eigendecompositions of -H, the checks at the end. OpenBLAS, which
NumPy and SciPy ship, starts a worker per core for such calls, and those workers keep
spinning for a while after each one, on the cores where XLA computes the next gradient:
with them, SciPy's L-BFGS-B core took a dozen times longer or more on a paper model of 90
dimensions than on one thread, and the whole start about half as long again. One thread
costs only the largest host matrices the start forms (K = 2,000, the most with a
Hessian), whose eigendecomposition takes about 1.6 times as long (benchmarks/README.md,
"Host threads").

The limit is threadpoolctl's (``threadpool_limits``, the scikit-learn project's library),
and holds only while the fit runs: BLAS's threads are as they were when it returns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from threadpoolctl import threadpool_limits

P = ParamSpec("P")
R = TypeVar("R")


def one_blas_thread(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with every BLAS library loaded in the process (OpenBLAS, MKL, BLIS) on
    one thread, as the module docstring says why; the limits in force before are
    restored when it returns or raises."""

    @functools.wraps(fn)
    def limited(*args: P.args, **kwargs: P.kwargs) -> R:
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return limited
