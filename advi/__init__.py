"""advi: automatic differentiation variational inference in JAX.

Kucukelbir, Ranganath, Gelman & Blei, "Automatic Variational Inference in Stan" (NIPS 2015),
with the refinements of the journal version (JMLR 2017) and of Stan's implementation.

Paper symbol -> code name:

=====================  ==========================================================
theta                  constrained latent variables: ``result.sample(...)`` dict
zeta = T(theta)        unconstrained variables in R^K (``Target.log_density`` input)
T, T^-1                NumPyro's ``biject_to`` per site (:func:`from_numpyro`)
log|det J_{T^-1}|      included in ``Target.log_density`` (``potential_energy``)
mu, omega              ``MeanFieldParams.mu``, ``MeanFieldParams.omega`` (log sigma)
L                      ``FullRankParams.L`` (full-rank family)
eta (Eq. 2.5's eps)    standard normal draws ``eps`` (M, K) inside :mod:`advi.elbo`
M                      ``grad_samples``
ELBO (L in the paper)  ``elbo`` (higher is better), ``elbo_samples`` draws per estimate
rho_k, eta, tau, alpha step-size sequence :func:`scale_by_stan_step_size`; ``eta``
B, N/B                 ``minibatch_size``; the plate's scale N/B (:func:`stream`: rows
                       read from the host)
relative tolerance     ``tol_rel_obj``, checked every ``eval_elbo`` iterations
=====================  ==========================================================
"""

from importlib.metadata import PackageNotFoundError, version

from .algorithm import algorithm
from .cache import enable_compilation_cache
from .diagnostics import pareto_khat
from .elbo import elbo_grad
from .families import FULLRANK, MEANFIELD, FullRankParams, MeanFieldParams, get_family
from .fit import fit
from .io import load
from .laplace import laplace_start, log_density_functions
from .linear_response import LinearResponseWarning
from .options import OPTIONS, Options
from .presets import PRESETS
from .result import ADVIError, ADVIResult, Approximation
from .spread import SpreadWarning
from .step_size import get_optimizer, scale_by_stan_step_size
from .streaming import stream
from .target import Target, from_log_density, from_numpyro

try:
    __version__ = version("advi-repro")
    """The installed distribution's version (``advi-repro``)."""
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# What a user calls. The types these return or take (advi.algorithm's Algorithm, the
# step's ADVIState and StepInfo, CheckpointInfo, ELBOHistory, LaplaceStart, ...) stay
# reachable through their modules (from advi.result import CheckpointInfo).
__all__ = [
    "ADVIError",
    "ADVIResult",
    "Approximation",
    "FULLRANK",
    "FullRankParams",
    "LinearResponseWarning",
    "MEANFIELD",
    "MeanFieldParams",
    "OPTIONS",
    "Options",
    "PRESETS",
    "SpreadWarning",
    "Target",
    "__version__",
    "algorithm",
    "elbo_grad",
    "enable_compilation_cache",
    "fit",
    "from_log_density",
    "from_numpyro",
    "get_family",
    "get_optimizer",
    "laplace_start",
    "load",
    "log_density_functions",
    "pareto_khat",
    "scale_by_stan_step_size",
    "stream",
]
