"""The jobs of the Snakemake workflow, enumerated by composing the Hydra config.

Hydra is the single source of truth for what a run is; Snakemake's config names only the
experiments, the seeds, the scale and a list of Hydra overrides. For each experiment, the
runs are its ``methods`` (each a list of overrides) times the expanded overrides times the
seeds. Overrides may sweep (``method.grad_samples=1,10``) exactly as ``fit.py -m`` does, both
in the workflow's overrides and in an experiment's method lists (E6:
``method.minibatch_size=50,100,500,1000``), and an override that picks the method group
(``method=advi``) replaces the experiment's list of methods. Every composed config is
checked (:func:`advi_repro.planning.config.to_run`) here, so a bad value fails when the workflow
starts,
before any job runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from advi_repro.planning.config import Config, register, to_run
from advi_repro.planning.data import data_path, heldout_rows
from advi_repro.planning.rerun import config_sha256
from advi_repro.planning.sweeps import RunFolders, expand_sweeps


class DataJob(NamedTuple):
    """Data one or more runs read: simulated (by ``model``'s ``simulate``, with ``kwargs``),
    fetched, or the E5/E6 histograms (``source`` imageclef: simulated, or of the images in
    ``image_dir``, with ``num_heldout`` rows held out of the standardisation)."""

    path: str
    source: str
    name: str
    seed: int
    kwargs: dict[str, Any]
    mirror_dir: str | None
    image_dir: str | None = None
    num_heldout: int | None = None
    model: str | None = None


class RunJob(NamedTuple):
    """One run of ``scripts/fit.py``: its overrides, the files it reads and writes, the CPUs
    it uses (``cores``), its wall-clock budget (``budget_s``, seconds), the hash of the
    settings that can change its result (``config_sha256``:
    :func:`advi_repro.planning.rerun.config_sha256`), which the fit rule compares, and
    whether its training data are streamed from the file (``streamed``: its scale's
    ``load`` has ``stream: true``), so that its memory does not grow with them."""

    scale: str
    experiment: str
    method: str
    seed: int
    overrides: tuple[str, ...]
    data: str
    trace: str
    cores: int = 1
    budget_s: float = float("inf")
    config_sha256: str = ""
    streamed: bool = False

    @property
    def info(self) -> str:
        """The run's ``info.json``, beside its trace."""
        return str(Path(self.trace).with_name("info.json"))

    @property
    def posterior_mean(self) -> str:
        """The run's ``posterior_mean.npz``, beside its trace."""
        return str(Path(self.trace).with_name("posterior_mean.npz"))


class FactorsPlan(NamedTuple):
    """A figure of fitted factors (:class:`advi_repro.planning.config.FactorsConfig`) and the run it
    draws: ``posterior_mean`` is that run's ``posterior_mean.npz``; when ``top_frames`` > 0,
    ``data`` is the run's data folder (made by the data rules) and ``frames_file`` the file in
    it whose rows are shown beside each factor (else both None)."""

    figure: str
    title: str
    claim: str
    method: str
    label: str
    seed: int
    site: str
    image_shape: tuple[int, int]
    posterior_mean: str
    top_frames: int = 0
    data: str | None = None
    note: str = ""
    frames_file: str | None = None

    @property
    def frames(self) -> str | None:
        """The data file whose rows (frames) are drawn beside the factors, or None."""
        return None if self.data is None else str(Path(self.data) / self.frames_file)

    def __str__(self) -> str:
        """One line for the report's job parameters (which print parameters with str)."""
        return (f"{self.site} of {self.label} (seed {self.seed}) as {self.image_shape[0]} x "
                f"{self.image_shape[1]} images, from {self.posterior_mean}")


class ExperimentPlan(NamedTuple):
    """An experiment's runs and what its figures and captions need (what the runs *did*,
    their scale, scoring and data, the report reads from their info.json).

    ``factors`` is None without a factors figure or when its run is not planned;
    ``claim`` (the paper's words), ``claim_id`` (the claim the reproduction table judges)
    and ``paper_code`` (where the paper shows the model's code) are None for an experiment
    that is not in the paper.
    """

    name: str
    model: str
    figure: str
    title: str
    claim: str | None
    reference_method: str | None
    runs: tuple[RunJob, ...]
    factors: FactorsPlan | None = None
    claim_id: str | None = None
    paper_code: str | None = None

    @property
    def methods(self) -> list[str]:
        """The method names of the runs, in the order the experiment lists them."""
        return list(dict.fromkeys(run.method for run in self.runs))

    @property
    def traces(self) -> list[str]:
        """The ``trace.csv`` of each planned run: what the experiment's tables and figure
        read, and nothing else under its runs folder."""
        return [run.trace for run in self.runs]

    @property
    def infos(self) -> list[str]:
        """The ``info.json`` of each planned run."""
        return [run.info for run in self.runs]


class Plan(NamedTuple):
    """Everything the workflow runs; paths are relative to the working directory."""

    results_dir: str
    experiments: tuple[ExperimentPlan, ...]
    data: dict[str, DataJob]

    @property
    def runs(self) -> tuple[RunJob, ...]:
        return tuple(run for experiment in self.experiments for run in experiment.runs)


def _picks_method(overrides: Sequence[str]) -> bool:
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return any(o.key_or_group == "method" for o in parsed)


def _data_job(run: Config) -> DataJob:
    data = run.experiment.data
    images = data.source == "imageclef"
    return DataJob(
        path=str(data_path(run)),
        source=data.source,
        name=data.name,
        seed=data.seed,
        kwargs=dict(run.experiment_scale().simulate),
        mirror_dir=run.mirror_dir,
        image_dir=run.data.image_dir if images else None,
        num_heldout=heldout_rows(run) if images else None,
        model=run.experiment.model,
    )


def _factors_plan(first: Config, runs: dict[str, RunJob], labels: dict[str, str]
                  ) -> FactorsPlan | None:
    factors = first.experiment.factors
    if factors is None:
        return None
    chosen = [run for run in runs.values() if run.method == factors.method]
    if not chosen:
        return None
    run = min(chosen, key=lambda r: r.seed)
    rows, columns = factors.image_shape
    frames_file = first.experiment.data.file if factors.top_frames else None
    if factors.top_frames and frames_file is None:
        raise ValueError(f"experiment {first.experiment.name}: factors.top_frames needs "
                         "data.file, the file whose rows are the frames")
    return FactorsPlan(
        figure=factors.figure, title=factors.title, claim=factors.claim,
        method=factors.method, label=labels[factors.method], seed=run.seed, site=factors.site,
        image_shape=(int(rows), int(columns)),
        posterior_mean=run.posterior_mean, top_frames=int(factors.top_frames),
        data=run.data if frames_file else None, frames_file=frames_file, note=factors.note,
    )


def seed_config(cfg: DictConfig, seed: int) -> dict[str, Any]:
    """The resolved config of ``cfg``'s run with ``seed`` (as ``seed=<k>`` on the command
    line gives it): what ``fit.py`` composes and ``info.json`` records under ``config``."""
    seeded = OmegaConf.merge(cfg, {"seed": seed})
    return OmegaConf.to_container(seeded, resolve=True)


def _experiment_plan(
    experiment: str, *, scale: str, seeds: Sequence[int], overrides: Sequence[str]
) -> tuple[ExperimentPlan, list[DataJob], str]:
    base = [f"experiment={experiment}", f"scale={scale}"]
    runs: dict[str, RunJob] = {}
    folders = RunFolders()
    data: list[DataJob] = []
    labels: dict[str, str] = {}
    first: Config | None = None
    for extra in expand_sweeps(overrides):
        if _picks_method(extra):
            method_lists: list[list[str]] = [[]]
        else:
            listed = to_run(compose("config", base + extra)).experiment.methods
            method_lists = [one for method in listed for one in expand_sweeps(method)]
        for method in method_lists:
            choice = [*base, *method, *extra]
            cfg = compose("config", choice)
            run = to_run(cfg)
            first = first or run
            data.append(_data_job(run))
            labels[run.method.run_name()] = run.method.label()
            for seed in seeds:
                out = run.run_dir(seed)
                folders.claim(out, (*choice, f"seed={seed}"))
                runs[str(out)] = RunJob(
                    scale=run.scale.name,
                    experiment=run.experiment.name,
                    method=run.method.run_name(),
                    seed=seed,
                    overrides=(*choice, f"seed={seed}"),
                    data=data[-1].path,
                    trace=str(out / "trace.csv"),
                    cores=run.cores,
                    budget_s=run.budget_s,
                    config_sha256=config_sha256(seed_config(cfg, seed)),
                    streamed=bool(run.experiment_scale().load.get("stream", False)),
                )
    if first is None:
        raise ValueError(f"experiment {experiment} has no runs")
    plan = ExperimentPlan(
        name=first.experiment.name,
        model=first.experiment.model,
        figure=first.experiment.figure,
        title=first.experiment.title,
        claim=first.experiment.claim,
        reference_method=first.experiment.reference_method,
        runs=tuple(runs.values()),
        factors=_factors_plan(first, runs, labels),
        claim_id=first.experiment.claim_id,
        paper_code=first.experiment.paper_code,
    )
    return plan, data, first.results_dir


def experiment_names(conf_dir: str | Path) -> list[str]:
    """The experiments of the Hydra config in ``conf_dir``: the names of its
    ``experiment/*.yaml`` files, sorted; what the workflow runs when its config names none.

    Raises:
        ValueError: the folder holds no experiment.
    """
    folder = Path(conf_dir) / "experiment"
    names = sorted(path.stem for path in folder.glob("*.yaml"))
    if not names:
        raise ValueError(f"no experiment: {folder} holds no .yaml file")
    return names


def _claim_data(data: dict[str, DataJob], job: DataJob) -> None:
    """Adds ``job`` to ``data`` (by path), refusing a second job for its file that would
    make other data (simulated by another model: give it another ``data.name``)."""
    earlier = data.setdefault(job.path, job)
    if earlier.source == "simulate" and earlier.model != job.model:
        raise ValueError(f"experiments of models {earlier.model!r} and {job.model!r} would "
                         f"simulate into one file, {job.path}: give one of them another "
                         "data.name")


def plan_workflow(
    *, experiments: Sequence[str], scale: str, seeds: Sequence[int], overrides: Sequence[str],
    conf_dir: str | Path,
) -> Plan:
    """Composes the config of every run the workflow must make.

    Args:
        experiments: names of ``conf/experiment/*.yaml`` (all: :func:`experiment_names`).
        scale: ``paper`` or ``smoke``.
        seeds: run seeds (each run of each method once per seed).
        overrides: Hydra overrides applied to every run, after the experiment's method
            overrides; sweeps expand to several runs.
        conf_dir: the Hydra config: the ``conf/`` of the checkout that runs (the workflow
            passes the one beside its Snakefile, which its ``scripts/fit.py`` composes too;
            :func:`advi_repro.planning.paths.checkout_conf`).

    Raises:
        ValueError: two runs would write the same folder, runs disagree on results_dir, two
            experiments' data share a file but not its content, or a config value is out of
            range; Hydra's errors for unknown keys or bad types.
    """
    register(conf_dir)
    plans, data, results_dirs = [], {}, set()
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        for experiment in experiments:
            plan, data_jobs, results_dir = _experiment_plan(
                experiment, scale=scale, seeds=seeds, overrides=overrides
            )
            plans.append(plan)
            for job in data_jobs:
                _claim_data(data, job)
            results_dirs.add(results_dir)
    if len(results_dirs) != 1:
        raise ValueError(f"all runs must share one results_dir, got {sorted(results_dirs)}")
    return Plan(results_dir=results_dirs.pop(), experiments=tuple(plans), data=data)
