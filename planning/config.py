"""The schema of a run: structured configs (dataclasses) that Hydra composes and checks.

One run is one experiment x one method x one scale x one seed. Hydra composes the YAML files
under ``conf/`` onto these dataclasses, so an unknown key or a wrongly typed value fails at
composition time with Hydra's message naming the key; :func:`to_run` then builds the
dataclass objects, whose ``__post_init__`` checks the values (a negative budget, M < 1) with
a message naming the field and the value, before any data is read.

Config groups (``conf/<group>/<option>.yaml``) and the schema each extends:

- ``experiment``: :class:`ExperimentConfig` (data, model, methods compared, figure, budget
  and data sizes for each scale).
- ``method``: :class:`AdviConfig`, :class:`NutsConfig` or :class:`HmcConfig`.
- ``scale``: :class:`ScaleConfig` (``paper`` or ``smoke``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

import advi
from planning.naming import advi_run_name, mcmc_run_name
from planning.paths import CONF_DIR, run_dir


def _check(obj: object, name: str, ok: Callable[[Any], bool], requirement: str) -> None:
    """Raises ValueError naming ``obj.name`` and its value unless ``ok(value)``.

    MISSING values are left to OmegaConf, which reports them when they are read.
    """
    value = getattr(obj, name)
    if value != MISSING and not ok(value):
        raise ValueError(f"{type(obj).__name__}.{name} = {value!r}: must be {requirement}")


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


@dataclass
class ScaleConfig:
    """Sizes shared by all experiments at one scale (``conf/scale/*.yaml``).

    Attributes:
        name: ``paper`` (the paper's sizes) or ``smoke`` (minutes, for tests and CI); also
            the key into :attr:`ExperimentConfig.scales`.
        eval_draws: S, draws from q scored at each ADVI checkpoint (Stan's output_samples).
        mcmc_num_warmup: MCMC warmup iterations (Stan's default 1,000).
        mcmc_num_samples: MCMC post-warmup draws (Stan's default 1,000).
        fast_compile: compile without XLA's backend (LLVM) optimisation and with the CPU's
            older emitters (:func:`runners.xla.fast_compile`): about half the compile time,
            slower iterations; for runs whose seconds are not measurements (``smoke``).
    """

    name: str = MISSING
    eval_draws: int = 1000
    mcmc_num_warmup: int = 1000
    mcmc_num_samples: int = 1000
    fast_compile: bool = False

    def __post_init__(self) -> None:
        _check(self, "eval_draws", lambda v: v >= 1, "an integer >= 1")
        _check(self, "mcmc_num_warmup", lambda v: v >= 0, "an integer >= 0")
        _check(self, "mcmc_num_samples", lambda v: v >= 1, "an integer >= 1")


DATA_SOURCES = ("simulate", "fetch", "imageclef")
"""The kinds of ``experiment.data.source`` (:class:`DataConfig`)."""


@dataclass
class DataConfig:
    """Where an experiment's data come from.

    Attributes:
        source: ``simulate`` (``planning.datasets.simulate.<name>(seed, **simulate)``, an
            .npz), ``fetch`` (``planning.datasets.fetch.fetch(name, ...)``, sha256-checked)
            or ``imageclef`` (the 576-dimensional colour histograms of E5 and E6 as a
            float32 .npy: a simulated stand-in, ``planning.datasets.simulate.<name>(seed,
            **simulate)``, unless the run's ``data.image_dir`` names a folder of real
            images, see :class:`DataOptions`).
        name: the simulator or data set name.
        seed: seed of the simulation and of the train/held-out split (fixed per experiment,
            so that runs with different seeds compare methods on the same data).
        file: the file of a fetched data set that the model's ``load`` reads (None: the
            data set's folder, e.g. election88's two CSV files).
    """

    source: str = MISSING
    name: str = MISSING
    seed: int = 0
    file: str | None = None

    def __post_init__(self) -> None:
        _check(self, "source", lambda v: v in DATA_SOURCES, " or ".join(map(repr, DATA_SOURCES)))


@dataclass
class DataOptions:
    """Run-wide data options (the top-level ``data`` key), as opposed to what an experiment's
    data are (``experiment.data``).

    Attributes:
        image_dir: a folder of .png/.jpg images; experiments with ``data.source: imageclef``
            (E5, E6) then use the RGB histograms of these images (``planning.datasets.images``,
            standardised with the training rows' mean and sd) instead of the simulated
            stand-in. Rows are the images in file-name order, the last ``n_heldout`` held
            out. Other experiments ignore it. None: the simulated stand-in (PAPER.md).
    """

    image_dir: str | None = None


@dataclass
class ExperimentScale:
    """What an experiment needs at one scale.

    Attributes:
        budget_s: wall-clock budget of each run in seconds (the clock of the timing protocol:
            compilation and evaluation excluded); a run stops cleanly at its first checkpoint
            past it and keeps what it has.
        simulate: keyword arguments of the simulator (sizes), for ``data.source=simulate``.
        load: keyword arguments of the model's ``load`` (sizes of the split).
    """

    budget_s: float = MISSING
    simulate: dict[str, Any] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(self, "budget_s", _positive, "a positive number of seconds")


@dataclass
class FactorsConfig:
    """A figure of a fitted factor matrix as grey images (Figures 5c, 5d).

    Each column k of the site's posterior mean (``posterior_mean.npz`` of one run, shape
    (I, K)) is drawn as an image of ``image_shape`` (rows, columns), row-major:
    ``value[:, k].reshape(image_shape)``.

    Attributes:
        figure: file stem under ``results/figures`` (e.g. ``fig5c_gamma_poisson_factors``).
        title: the figure's title (the paper's panel caption).
        claim: the paper's claim about the factors, quoted in the report's caption.
        method: the run (method folder, e.g. ``advi_M1``) whose posterior mean is drawn; its
            first seed is used.
        site: the latent site, (I, K).
        image_shape: (rows, columns), rows * columns = I (Frey faces: 28 x 20 = 560).
        top_frames: beside each factor k, the data rows (frames) with the largest posterior
            mean loading ``theta[u, k]``, this many (0: the factors alone); the frames are
            rows of the experiment's data file (``data.file``), drawn in ``image_shape``.
        note: what was found about these factors beyond the figure (a study's outcome, with
            its numbers), shown in the caption; empty: nothing.
    """

    figure: str = MISSING
    title: str = MISSING
    claim: str = MISSING
    method: str = "advi_M1"
    site: str = "beta"
    image_shape: list[int] = field(default_factory=lambda: [28, 20])
    top_frames: int = 0
    note: str = ""

    def __post_init__(self) -> None:
        _check(self, "image_shape", lambda v: len(v) == 2 and min(v) >= 1,
               "two positive integers (rows, columns)")
        _check(self, "top_frames", lambda v: int(v) == v and v >= 0, "an integer >= 0")


@dataclass
class ExperimentConfig:
    """One paper experiment (``conf/experiment/*.yaml``).

    Attributes:
        name: the experiment id, the folder under ``results/runs``.
        model: the model module, ``models.get(model)``.
        model_args: the model's keyword hyperparameters, bound to it for every method (e.g.
            ``{K: 10}``); empty: the model's defaults.
        figure: file stem of its figure under ``results/figures`` (e.g. ``fig4a_linreg_ard``).
        title: the figure's title (the paper's panel caption); ``{n_train}``-style fields
            are filled with the data sizes the plotted runs recorded in their info.json
            (``analysis.figures.fill_title``), so a smoke run's title gives its own sizes.
        claim: the paper's claim, quoted in the report's caption.
        data: where the data come from.
        methods: the methods compared, each a list of Hydra overrides
            (e.g. ``[method=advi, method.grad_samples=10]``); an override may sweep
            (``method.minibatch_size=50,100``), giving one method per value.
        reference_method: the method id whose final accuracy the others are timed against
            (e.g. ``nuts``, or the largest minibatch, ``advi_M1_B1000``); None: none.
        factors: a figure of the fitted factors (Figures 5c, 5d), or None.
        scales: per scale name, the budget and data sizes.
    """

    name: str = MISSING
    model: str = MISSING
    model_args: dict[str, Any] = field(default_factory=dict)
    figure: str = MISSING
    title: str = MISSING
    claim: str = MISSING
    data: DataConfig = field(default_factory=DataConfig)
    methods: list[list[str]] = field(default_factory=list)
    reference_method: str | None = "nuts"
    factors: FactorsConfig | None = None
    scales: dict[str, ExperimentScale] = field(default_factory=dict)


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
        _check(self, "preset", lambda v: v in advi.PRESETS, "|".join(advi.PRESETS))
        _check(self, "family", lambda v: v in (None, "meanfield", "fullrank"),
               "meanfield|fullrank|null")
        for name in ("grad_samples", "elbo_samples", "adapt_iter", "eval_elbo", "max_iter",
                     "minibatch_size"):
            _check(self, name, lambda v: v is None or v >= 1, "an integer >= 1 or null")
        for name in ("checkpoint_every", "eval_draws"):
            _check(self, name, lambda v: v >= 1, "an integer >= 1")
        _check(self, "eta", lambda v: v is None or _positive(v), "positive or null")
        _check(self, "tol_rel_obj", lambda v: v is None or _positive(v), "positive or null")

    def options(self) -> dict[str, Any]:
        """The ``advi.fit`` options set here (null ones left to the preset)."""
        names = [n for n in advi.OPTIONS if hasattr(self, n)]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def resolved(self) -> advi.Options:
        """Every ``advi.fit`` option with its value for this run (preset, then overrides)."""
        return advi.PRESETS[self.preset].replace(**self.options())

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
        _check(self, "num_warmup", lambda v: v >= 0, "an integer >= 0")
        _check(self, "num_samples", lambda v: v >= 1, "an integer >= 1")
        _check(self, "target_accept_prob", lambda v: 0 < v < 1, "in (0, 1)")
        _check(self, "checkpoint_every", lambda v: v >= 1, "an integer >= 1")
        _check(self, "init", lambda v: v in MCMC_INITS, " or ".join(map(repr, MCMC_INITS)))

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
        _check(self, "max_tree_depth", lambda v: v >= 1, "an integer >= 1")

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
        _check(self, "trajectory_length", _positive, "positive")

    def run_name(self) -> str:
        """``hmc`` (``hmc_dense`` with a dense mass matrix, ``hmc_init-advi`` started at
        ADVI's mean)."""
        return mcmc_run_name("hmc", self._extras())

    def label(self) -> str:
        """The legend entry, ``HMC`` (``HMC (dense, from ADVI)`` for non-defaults)."""
        return "HMC" + self._details()


MethodConfig = AdviConfig | NutsConfig | HmcConfig
"""The method schemas: ``conf/method/<name>.yaml`` extends one of them."""


@dataclass
class Config:
    """A whole run (``conf/config.yaml``).

    Attributes:
        experiment, method, scale: the three config groups.
        seed: the run's seed (inference randomness; the data's seed is ``experiment.data``).
        budget_s: this run's wall-clock budget; by default the experiment's at this scale.
        results_dir: root of all outputs (data, runs, figures).
        mirror_dir: folder with local copies of the real data sets; null uses
            ``<repo>/../shared/data`` when it exists, else the upstream URLs
            (``planning.datasets.fetch``).
        data: run-wide data options (``data.image_dir``: real images for E5 and E6).
        cores: the CPUs the run uses; the workflow runs as many fits side by side as
            ``--cores`` allows, each pinned to its own (:mod:`runners.cpus`).
    """

    experiment: ExperimentConfig = MISSING
    method: Any = MISSING
    scale: ScaleConfig = MISSING
    seed: int = 0
    budget_s: float = MISSING
    results_dir: str = "results"
    mirror_dir: str | None = None
    data: DataOptions = field(default_factory=DataOptions)
    cores: int = 1

    def __post_init__(self) -> None:
        _check(self, "budget_s", _positive, "a positive number of seconds")
        _check(self, "cores", lambda v: v >= 1, "an integer >= 1 (CPUs the run uses)")
        _check(self, "seed", lambda v: v >= 0, "an integer >= 0")

    def run_dir(self, seed: int | None = None) -> Path:
        """The run's folder (:func:`planning.paths.run_dir`); ``seed``: another seed's run
        of the same configuration (default: this run's seed)."""
        return run_dir(self.results_dir, self.scale.name, self.experiment.name,
                       self.method.run_name(), self.seed if seed is None else seed)

    def experiment_scale(self) -> ExperimentScale:
        """The experiment's settings at this run's scale."""
        try:
            return self.experiment.scales[self.scale.name]
        except KeyError:
            raise KeyError(
                f"experiment {self.experiment.name!r} has no settings for scale "
                f"{self.scale.name!r} (experiment.scales has {sorted(self.experiment.scales)})"
            ) from None


def register() -> None:
    """Stores the schemas in Hydra's ConfigStore, which the YAML files extend by name, and
    registers the ``choices`` resolver (:func:`choices`) that ``fit.py --help`` uses."""
    OmegaConf.register_new_resolver("choices", choices, replace=True)
    store = ConfigStore.instance()
    store.store(name="config_schema", node=Config)
    store.store(group="experiment", name="experiment_schema", node=ExperimentConfig)
    store.store(group="scale", name="scale_schema", node=ScaleConfig)
    store.store(group="method", name="advi_schema", node=AdviConfig)
    store.store(group="method", name="nuts_schema", node=NutsConfig)
    store.store(group="method", name="hmc_schema", node=HmcConfig)


def choices(group: str) -> str:
    """The options of config group ``group`` that a user may pick, comma-separated: its
    ``conf/<group>/*.yaml`` files (not the schemas they extend), e.g. ``paper, smoke``."""
    return ", ".join(sorted(path.stem for path in (CONF_DIR / group).glob("*.yaml")))


def to_run(cfg: DictConfig) -> Config:
    """Resolves and checks a composed config, returning the typed :class:`Config`.

    Raises:
        ValueError: a value out of range, naming the field and the value; a minibatch
            larger than the training rows the experiment's sizes give.
        KeyError: the experiment has no settings for the chosen scale.
    """
    run = OmegaConf.to_object(cfg)
    assert isinstance(run, Config), type(run)
    if not isinstance(run.method, MethodConfig):
        raise TypeError(f"method must extend a method schema, got {type(run.method).__name__}")
    _check_minibatch(run)
    return run


def _check_minibatch(run: Config) -> None:
    """B <= N, before any data is made or loaded, where the sizes name N (``load.n_train``,
    else ``simulate.num_train``); other data sets are checked by ``advi.fit``."""
    batch = getattr(run.method, "minibatch_size", None)
    sizes = run.experiment_scale()
    rows = sizes.load.get("n_train", sizes.simulate.get("num_train"))
    if batch is not None and rows is not None and batch > rows:
        raise ValueError(
            f"method.minibatch_size = {batch} exceeds the {rows} training rows of experiment "
            f"{run.experiment.name!r} at scale {run.scale.name!r}: choose at most {rows}, "
            "or null for every row")
