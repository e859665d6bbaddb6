"""The method schemas of a run (``conf/method/*.yaml`` extends one): ADVI through
``advi.fit`` (a preset and what differs from it), NUTS and static HMC through NumPyro; each
names its run (:mod:`advi_repro.planning.naming`) and its legend entry."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import advi
from advi_repro.planning.checks import check, positive
from advi_repro.planning.naming import advi_run_name, mcmc_run_name


@dataclass
class AdviConfig:
    """ADVI through ``advi.fit``: a preset and the options that override it
    (``conf/method/advi.yaml``, ``advi_robust.yaml``). An option left null takes the
    preset's value (``advi.PRESETS``, the one home of the defaults).

    Attributes:
        preset: ``stan`` (Stan's ADVI, the paper's algorithm) or ``robust`` (the library's
            own: Laplace start, preconditioned Adam, split-R-hat stop, iterate averaging).
        family: ``meanfield`` (the paper) or ``fullrank``.
        grad_samples: M, Monte Carlo draws per gradient (paper Section 2.5).
        elbo_samples: draws per ELBO estimate for the convergence check.
        eta: step-size scale; null takes the preset's (Stan's: the eta search).
        adapt_iter: iterations per eta candidate in the search.
        tol_rel_obj: relative ELBO tolerance of Stan's convergence rule.
        eval_elbo: iterations between ELBO estimates (or stationarity checks).
        max_iter: iteration cap.
        minibatch_size: B for stochastic ADVI (paper Section 2.6); None uses all data.
        init: initial mu: ``random`` (N(0, I), the paper's study), ``zero`` (Algorithm 1)
            or ``stan`` (U(-2, 2)).
        optimizer: ``stan`` (the paper's step-size sequence) or an optax optimiser name.
        checkpoint_every: iterations between checkpoints (held-out score, trace row).
        eval_draws: S, draws from q scored at each checkpoint.
    """

    preset: str = "stan"
    family: str | None = None
    grad_samples: int | None = None
    elbo_samples: int | None = None
    eta: float | None = None
    adapt_iter: int | None = None
    tol_rel_obj: float | None = None
    eval_elbo: int | None = None
    max_iter: int | None = None
    minibatch_size: int | None = None
    init: str | None = None
    optimizer: str | None = None
    checkpoint_every: int = 100
    eval_draws: int = 1000

    def __post_init__(self) -> None:
        check(self, "preset", lambda v: v in advi.PRESETS, "|".join(advi.PRESETS))
        check(self, "family", lambda v: v in (None, "meanfield", "fullrank"),
               "meanfield|fullrank|null")
        for name in ("grad_samples", "elbo_samples", "adapt_iter", "eval_elbo", "max_iter",
                     "minibatch_size"):
            check(self, name, lambda v: v is None or v >= 1, "an integer >= 1 or null")
        for name in ("checkpoint_every", "eval_draws"):
            check(self, name, lambda v: v >= 1, "an integer >= 1")
        check(self, "eta", lambda v: v is None or positive(v), "positive or null")
        check(self, "tol_rel_obj", lambda v: v is None or positive(v), "positive or null")

    def options(self) -> dict[str, Any]:
        """The ``advi.fit`` options set here (null ones left to the preset)."""
        names = [n for n in advi.OPTIONS if hasattr(self, n)]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def resolved(self) -> advi.Options:
        """Every ``advi.fit`` option with its value for this run (preset, then overrides;
        ``advi.presets.resolve``, as ``advi.fit`` resolves them: e.g. the robust preset's
        M is 1 for mean-field and ``advi.presets.FULLRANK_GRAD_SAMPLES`` for full-rank)."""
        return advi.presets.resolve(self.preset, self.options())

    def run_name(self) -> str:
        """The method's folder name, e.g. ``advi_M1``, ``advi_M10_B500``, ``advi_robust_M1``.

        It names every setting that changes the algorithm (preset, family, M, B, a fixed
        eta, the initialisation, the optimiser), so a sweep over any of them gives distinct
        folders.
        """
        o, base = self.resolved(), advi.PRESETS[self.preset]
        extras = [f"eta{o.eta:g}"] if o.eta != base.eta else []
        extras += [f"init-{o.init}"] if o.init != base.init else []
        extras += [o.optimizer] if o.optimizer != base.optimizer else []
        return advi_run_name(preset=self.preset, family=o.family, grad_samples=o.grad_samples,
                             minibatch_size=o.minibatch_size, extras=extras)

    def label(self) -> str:
        """The legend entry, as in the paper: ``ADVI (M=1)``, ``ADVI (M=1, B=500)``,
        ``ADVI robust (M=1)``."""
        o, base = self.resolved(), advi.PRESETS[self.preset]
        details = [f"M={o.grad_samples}"]
        if o.minibatch_size is not None:
            details.append(f"B={o.minibatch_size}")
        if o.eta != base.eta:
            details.append(f"eta={o.eta:g}")
        family = "" if o.family == "meanfield" else f" {o.family}"
        preset = "" if self.preset == "stan" else f" {self.preset}"
        return f"ADVI{preset}{family} ({', '.join(details)})"


@dataclass
class McmcConfig:
    """What NUTS and HMC share: NumPyro's functional ``hmc`` API with Stan's defaults.

    Attributes:
        num_warmup: warmup (adaptation) iterations.
        num_samples: post-warmup draws.
        target_accept_prob: dual-averaging target (Stan's adapt_delta = 0.8).
        dense_mass: False is Stan's diagonal mass matrix.
        adapt_mass_matrix: adapt the mass matrix in warmup (Stan does, also for static HMC).
        checkpoint_every: iterations (warmup or sampling) between checkpoints.
        init: the chain's starting point: ``uniform`` (Stan's default, zeta ~ U(-2, 2)) or
            ``advi`` (the constrained image of the mean of a mean-field ADVI fit with Stan's
            defaults, M = 1; its optimisation seconds count on the chain's clock, its
            compilation with the chain's, as PyMC's ``init="advi"``).
    """

    num_warmup: int = 1000
    num_samples: int = 1000
    target_accept_prob: float = 0.8
    dense_mass: bool = False
    adapt_mass_matrix: bool = True
    checkpoint_every: int = 50
    init: str = "uniform"

    def __post_init__(self) -> None:
        check(self, "num_warmup", lambda v: v >= 0, "an integer >= 0")
        check(self, "num_samples", lambda v: v >= 1, "an integer >= 1")
        check(self, "target_accept_prob", lambda v: 0 < v < 1, "in (0, 1)")
        check(self, "checkpoint_every", lambda v: v >= 1, "an integer >= 1")
        check(self, "init", lambda v: v in MCMC_INITS, " or ".join(map(repr, MCMC_INITS)))

    def _extras(self) -> list[str]:
        """What the run's name adds for non-default settings (``dense``, ``init-advi``)."""
        return (["dense"] if self.dense_mass else []) + (
            [] if self.init == "uniform" else [f"init-{self.init}"])

    def _details(self) -> str:
        """What the legend adds for non-default settings, e.g. `` (dense, from ADVI)``."""
        details = (["dense"] if self.dense_mass else []) + (
            [] if self.init == "uniform" else [f"from {self.init.upper()}"])
        return f" ({', '.join(details)})" if details else ""


MCMC_INITS = ("uniform", "advi")
"""The starting points of an MCMC chain (:attr:`McmcConfig.init`)."""


@dataclass
class NutsConfig(McmcConfig):
    """The No-U-Turn sampler (Stan's default sampler) (``conf/method/nuts.yaml``).

    Attributes:
        max_tree_depth: Stan's default 10.
    """

    max_tree_depth: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self, "max_tree_depth", lambda v: v >= 1, "an integer >= 1")

    def run_name(self) -> str:
        """``nuts`` (``nuts_dense`` with a dense mass matrix, ``nuts_init-advi`` started at
        ADVI's mean)."""
        return mcmc_run_name("nuts", self._extras())

    def label(self) -> str:
        """The legend entry, ``NUTS`` (``NUTS (dense, from ADVI)`` for non-defaults)."""
        return "NUTS" + self._details()


@dataclass
class HmcConfig(McmcConfig):
    """Static HMC: fixed trajectory length, step size adapted in warmup (``conf/method/hmc.yaml``).

    Attributes:
        trajectory_length: integration time L * epsilon (Stan's int_time default 2 pi).
    """

    trajectory_length: float = 2 * math.pi

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self, "trajectory_length", positive, "positive")

    def run_name(self) -> str:
        """``hmc`` (``hmc_dense`` with a dense mass matrix, ``hmc_init-advi`` started at
        ADVI's mean)."""
        return mcmc_run_name("hmc", self._extras())

    def label(self) -> str:
        """The legend entry, ``HMC`` (``HMC (dense, from ADVI)`` for non-defaults)."""
        return "HMC" + self._details()


MethodConfig = AdviConfig | NutsConfig | HmcConfig
"""The method schemas: ``conf/method/<name>.yaml`` extends one of them."""
