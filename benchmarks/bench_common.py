"""What the benchmarks share: this checkout on ``sys.path``, the report helpers, the eight
schools model and the E1 (ARD regression) problem with its held-out score.

Imported (as ``common``) by ``bench_advi.py``, ``bench_accuracy.py`` and
``bench_minibatch.py``, run as scripts from any directory (Python puts ``benchmarks/`` first
on ``sys.path``). The checkout goes on ``sys.path`` only where ``advi_repro`` is not
installed: with a regular (non-editable) install, the checkout's ``advi_repro/`` holds
none of the subpackages the install maps into it (``models/``, ``planning/``, ...), and
put first it would shadow the installed package.
"""

from __future__ import annotations

import importlib.util
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def put_checkout_on_path(root: Path = ROOT) -> None:
    """Put ``root`` first on ``sys.path`` unless ``advi_repro`` is importable without it (an
    install, editable or not, already maps its subpackages: the checkout's own folder would
    shadow a regular install)."""
    if str(root) not in sys.path and importlib.util.find_spec("advi_repro") is None:
        sys.path.insert(0, str(root))


put_checkout_on_path()

EIGHT_Y = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
EIGHT_SIGMA = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)
"""The classic eight schools data (Rubin 1981; Gelman et al., BDA3 Section 5.5)."""


def verdict(ok: bool) -> str:
    """"PASS" or "MISS"."""
    return "PASS" if ok else "MISS"


def format_load() -> str:
    """The 1, 5 and 15-minute load averages, e.g. "1.99, 2.12, 1.74"."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def print_environment() -> None:
    """Device, versions, XLA flags and the load average (other processes skew timings)."""
    import jax
    import jaxlib
    import numpy as np
    import numpyro
    import optax

    print(f"  device    {jax.devices()}  ({os.cpu_count()} CPU cores visible, "
          f"{platform.processor() or platform.machine()})")
    print(f"  versions  python {platform.python_version()}, jax {jax.__version__}, "
          f"jaxlib {jaxlib.__version__}, numpyro {numpyro.__version__}, "
          f"optax {optax.__version__}, numpy {np.__version__}")
    print(f"  XLA_FLAGS {os.environ.get('XLA_FLAGS', '(unset)')};  load average (1, 5, 15 min) "
          f"{format_load()}")
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print("  WARNING   other processes are using the CPU; expect inflated, noisy timings")


def eight_schools(y: Any, sigma: Any, tau: float | None = None) -> None:
    """Eight schools, non-centred: mu ~ N(0, 5), tau ~ HalfCauchy(5), theta_tilde_j ~ N(0, 1),
    y_j ~ N(mu + tau theta_tilde_j, sigma_j). With ``tau`` given it is known (not a latent
    site) and the posterior of (mu, theta_tilde) is Gaussian."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    if tau is None:
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("schools", y.shape[0]):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)


def eight_schools_data(seed: int | None = None) -> tuple[Any, Any]:
    """``(y, sigma)`` as float32 arrays: the classic data (seed None), or data of the same
    shapes drawn around them (another seed)."""
    import numpy as np

    y, sigma = np.array(EIGHT_Y), np.array(EIGHT_SIGMA)
    if seed is not None:
        rng = np.random.default_rng(seed)
        y = y + rng.normal(0.0, sigma)
        sigma = sigma * rng.uniform(0.8, 1.25, sigma.shape)
    return y.astype(np.float32), sigma.astype(np.float32)


def e1_problem(seed: int, num_train: int, num_features: int) -> tuple[Any, tuple, tuple]:
    """E1 (paper Appendix F): ``(model, (X, y) training, (X, y) held-out)`` from
    ``advi_repro.models.linreg_ard`` and its ``simulate(seed)`` (1,000 held-out rows)."""
    import jax.numpy as jnp

    from advi_repro.models.linreg_ard import model, simulate

    a = simulate(seed, num_train=num_train, num_features=num_features)
    train = (jnp.asarray(a["X_train"]), jnp.asarray(a["y_train"]))
    return model, train, (jnp.asarray(a["X_heldout"]), jnp.asarray(a["y_heldout"]))


def heldout_lpd(draws: dict, X: Any, y: Any) -> float:
    """E1's held-out log predictive density per row, nats: the log of the mean over draws of
    p(y_n | draw), averaged over the held-out rows."""
    import jax

    from advi_repro.models.linreg_ard import log_likelihood

    ll = log_likelihood(draws, X, y)  # (S, N)
    per_row = jax.scipy.special.logsumexp(ll, axis=0) - math.log(ll.shape[0])
    return float(per_row.mean())
