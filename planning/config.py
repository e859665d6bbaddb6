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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from advi_repro import models
from advi_repro.planning.checks import check, positive
from advi_repro.planning.methods import AdviConfig, HmcConfig, MethodConfig, NutsConfig
from advi_repro.planning.paths import run_dir


@dataclass
class ScaleConfig:
    """Sizes shared by all experiments at one scale (``conf/scale/*.yaml``).

    Attributes:
        name: ``paper`` (the paper's sizes) or ``smoke`` (minutes, for tests and CI); also
            the key into :attr:`ExperimentConfig.scales`.
        eval_draws: S, draws from q scored at each ADVI checkpoint (Stan's output_samples).
        mcmc_num_warmup: MCMC warmup iterations (Stan's default 1,000).
        mcmc_num_samples: MCMC post-warmup draws (Stan's default 1,000).
    """

    name: str = MISSING
    eval_draws: int = 1000
    mcmc_num_warmup: int = 1000
    mcmc_num_samples: int = 1000

    def __post_init__(self) -> None:
        check(self, "eval_draws", lambda v: v >= 1, "an integer >= 1")
        check(self, "mcmc_num_warmup", lambda v: v >= 0, "an integer >= 0")
        check(self, "mcmc_num_samples", lambda v: v >= 1, "an integer >= 1")


DATA_SOURCES = ("simulate", "fetch", "imageclef", "file")
"""The kinds of ``experiment.data.source`` (:class:`DataConfig`)."""


@dataclass
class DataConfig:
    """Where an experiment's data come from.

    Attributes:
        source: ``simulate`` (the model module's ``simulate(seed, **simulate)``, saved as
            an .npz named after ``name``), ``fetch``
            (``advi_repro.planning.datasets.fetch.fetch(name, ...)``, sha256-checked), or
            ``imageclef`` (the 576-dimensional colour histograms of E5 and E6 as a
            float32 .npy: a simulated stand-in, ``advi_repro.planning.datasets.simulate.<name>(seed,
            **simulate)``, unless the run's ``data.image_dir`` names a folder of real
            images, see :class:`DataOptions`), or ``file``: a CSV or .npy file of your own
            (``path``), split at random by
            :func:`advi_repro.planning.datasets.own.split_file` with the scale's ``load``
            keywords (``heldout_fraction``, ``columns``: the model's argument names).
        name: the data set's name (its folder under ``results/data``; for ``imageclef``
            the stand-in, ``image_standin`` or ``gmm_standin``).
        seed: seed of the simulation and of the train/held-out split (fixed per experiment,
            so that runs with different seeds compare methods on the same data).
        file: the file of a fetched data set that the model's ``load`` reads (None: the
            data set's folder, e.g. election88's two CSV files).
        path: ``source: file``'s data file, relative to the working directory or absolute.
    """

    source: str = MISSING
    name: str = MISSING
    seed: int = 0
    file: str | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        check(self, "source", lambda v: v in DATA_SOURCES, " or ".join(map(repr, DATA_SOURCES)))
        if (self.source == "file") != (self.path is not None):
            raise ValueError(f"DataConfig.path = {self.path!r}: data.source: file needs "
                             "data.path (your .csv or .npy file), and only it takes one")


@dataclass
class DataOptions:
    """Run-wide data options (the top-level ``data`` key), as opposed to what an experiment's
    data are (``experiment.data``).

    Attributes:
        image_dir: a folder of .png/.jpg images; experiments with ``data.source: imageclef``
            (E5, E6) then use the RGB histograms of these images
            (``advi_repro.planning.datasets.images``,
            standardised with the training rows' mean and sd) instead of the simulated
            stand-in. Rows are the images in file-name order, the last ``n_heldout`` held
            out. Other experiments ignore it. None: the stand-in (docs/standin-images.md).
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
        check(self, "budget_s", positive, "a positive number of seconds")


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
        check(self, "image_shape", lambda v: len(v) == 2 and min(v) >= 1,
               "two positive integers (rows, columns)")
        check(self, "top_frames", lambda v: int(v) == v and v >= 0, "an integer >= 0")


@dataclass
class ExperimentConfig:
    """One paper experiment (``conf/experiment/*.yaml``).

    Attributes:
        name: the experiment id, the folder under ``results/runs`` (the YAML file's name).
        model: the model module ``models/<model>.py`` (``advi_repro.models.get(model)``);
            several experiments may fit one model with other settings or data.
        model_args: the model's keyword hyperparameters, bound to it for every method (e.g.
            ``{K: 10}``); empty: the model's defaults.
        figure: file stem of its figure under ``results/figures`` (e.g. ``fig4a_linreg_ard``).
        title: the figure's title (the paper's panel caption); ``{n_train}``-style fields
            are filled with the data sizes the plotted runs recorded in their info.json
            (``advi_repro.analysis.figures.fill_title``), so a smoke run's title gives its own
            sizes.
        claim: the paper's claim, quoted in the report's caption; None: an experiment that
            is not in the paper.
        claim_id: the claim of the paper this experiment tests, judged in the reproduction
            table (an id of ``advi_repro.analysis.paper_claims.CLAIMS``: ``E1`` to ``E6``);
            None: none, the table gives the experiment a "no paper claim" row.
        paper_code: where the paper shows the model's (Stan) code, e.g. ``Appendix F``, for
            the report's model page; None: a model not in the paper.
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
    claim: str | None = None
    claim_id: str | None = None
    paper_code: str | None = None
    data: DataConfig = field(default_factory=DataConfig)
    methods: list[list[str]] = field(default_factory=list)
    reference_method: str | None = "nuts"
    factors: FactorsConfig | None = None
    scales: dict[str, ExperimentScale] = field(default_factory=dict)


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
            (``advi_repro.planning.datasets.fetch``).
        data: run-wide data options (``data.image_dir``: real images for E5 and E6).
        cores: the CPUs the run uses; the workflow runs as many fits side by side as
            ``--cores`` allows, each pinned to its own (:mod:`advi_repro.runners.cpus`).
        input_data: the run's data file or folder, as the workflow's data rules made it
            (the fit rule passes its Snakemake input); None, a run by hand: the data the
            experiment's settings name, made first if missing
            (:func:`advi_repro.planning.data.prepare_data`).
        output_dir: the run's folder (the fit rule passes its Snakemake output's); None:
            :meth:`run_dir`.
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
    input_data: str | None = None
    output_dir: str | None = None

    def __post_init__(self) -> None:
        check(self, "budget_s", positive, "a positive number of seconds")
        check(self, "cores", lambda v: v >= 1, "an integer >= 1 (CPUs the run uses)")
        check(self, "seed", lambda v: v >= 0, "an integer >= 0")

    def run_dir(self, seed: int | None = None) -> Path:
        """The run's folder: ``output_dir`` when given, else
        :func:`advi_repro.planning.paths.run_dir`'s; ``seed``: another seed's run of the same
        configuration (default: this run's seed), always the latter."""
        if seed is None and self.output_dir is not None:
            return Path(self.output_dir)
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


def register(conf_dir: str | Path) -> None:
    """Stores the schemas in Hydra's ConfigStore, which the YAML files extend by name, and
    registers the ``choices`` resolver (:func:`choices` of ``conf_dir``, the Hydra config in
    use) that ``fit.py --help`` uses."""
    OmegaConf.register_new_resolver("choices", lambda group: choices(group, conf_dir),
                                    replace=True)
    store = ConfigStore.instance()
    store.store(name="config_schema", node=Config)
    store.store(group="experiment", name="experiment_schema", node=ExperimentConfig)
    store.store(group="scale", name="scale_schema", node=ScaleConfig)
    store.store(group="method", name="advi_schema", node=AdviConfig)
    store.store(group="method", name="nuts_schema", node=NutsConfig)
    store.store(group="method", name="hmc_schema", node=HmcConfig)


def choices(group: str, conf_dir: str | Path) -> str:
    """The options of config group ``group`` that a user may pick, comma-separated: the
    ``<conf_dir>/<group>/*.yaml`` files (not the schemas they extend), e.g. ``paper, smoke``."""
    return ", ".join(sorted(path.stem for path in (Path(conf_dir) / group).glob("*.yaml")))


def to_run(cfg: DictConfig) -> Config:
    """Resolves and checks a composed config, returning the typed :class:`Config`.

    Raises:
        ValueError: a value out of range, naming the field and the value; a minibatch
            larger than the training rows the experiment's sizes give; an experiment whose
            ``model`` names no model module.
        KeyError: the experiment has no settings for the chosen scale.
    """
    run = OmegaConf.to_object(cfg)
    assert isinstance(run, Config), type(run)
    if not isinstance(run.method, MethodConfig):
        raise TypeError(f"method must extend a method schema, got {type(run.method).__name__}")
    models.check_name(run.experiment.model)
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
