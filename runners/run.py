"""One run end to end: data -> model -> runner -> trace.csv, posterior_mean.npz, info.json."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

from advi.precision import matmul_scope
from advi_repro import models
from advi_repro.planning.config import Config
from advi_repro.planning.data import describe_data, load_problem, prepare_data
from advi_repro.planning.files import partial_path, staged_dir, write_json
from advi_repro.planning.methods import AdviConfig
from advi_repro.planning.rerun import config_sha256
from advi_repro.runners.advi_runner import run_advi
from advi_repro.runners.cpus import cpu_share
from advi_repro.runners.interrupt import Interrupted, StopRequest, stop_on_signals
from advi_repro.runners.mcmc_runner import run_mcmc
from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.provenance import environment
from advi_repro.runners.scoring import make_log_likelihood
from advi_repro.runners.trace import TraceWriter

logger = logging.getLogger(__name__)


def _fit(run: Config, problem: models.Problem, work: Path, trace: TraceWriter,
         stop: StopRequest) -> dict[str, Any]:
    """Runs the method's runner on ``problem``, writing the trace and the posterior mean
    into the folder ``work``, until it ends or ``stop`` asks; returns the runner's facts."""
    module = models.get(run.experiment.model)
    runner = run_advi if isinstance(run.method, AdviConfig) else run_mcmc
    return runner(
        functools.partial(module.model, **run.experiment.model_args),
        problem.train,
        run.method,
        rng_key=jax.random.PRNGKey(run.seed),
        budget_s=run.budget_s,
        log_likelihood=make_log_likelihood(module, problem.heldout),
        trace=trace,
        posterior_mean=PosteriorMean(work / "posterior_mean.npz"),
        stop=stop,
    )


def execute(run: Config, resolved_config: dict[str, Any]) -> Path:
    """Runs ``run`` and writes its trace.csv and posterior_mean.npz (per checkpoint, see
    :mod:`advi_repro.runners.posterior`) and info.json (at the end).

    The run writes into a fresh folder that replaces the run's folder only when it
    finishes (:func:`advi_repro.planning.files.staged_dir`); a run that stops early leaves the old
    folder as it was and its own files in ``seed<k>.partial``, with an ``info.json`` whose
    ``status`` says why. SIGINT or SIGTERM stops the run at its next checkpoint
    (:mod:`advi_repro.runners.interrupt`).

    Args:
        run: the checked config (:func:`advi_repro.planning.config.to_run`).
        resolved_config: the same config as plain containers, recorded in info.json.

    The process is first pinned to its share of CPUs (``run.cores``,
    :func:`advi_repro.runners.cpus.cpu_share`), which ``info.json`` records under ``resources``.
    Every method and the scoring trace their matrix products at full precision
    (:func:`advi.precision.matmul_scope`: float32 on a GPU too, not TensorFloat-32), as
    ``advi.fit`` does, so that all methods compute alike on any device.

    Returns:
        The run's output folder.

    Raises:
        Interrupted: a signal stopped the run (its ``exit_code``: 128 + the signal).
        ValueError: ``run.cores`` is more than the CPUs this process may use.
    """
    with cpu_share(run.cores, run.results_dir) as share, matmul_scope():
        return _execute(run, resolved_config, lambda: share.recount(run.results_dir))


def _execute(run: Config, resolved_config: dict[str, Any],
             resources: Callable[[], dict[str, Any]]) -> Path:
    start = time.perf_counter()
    method_name = run.method.run_name()
    out = run.run_dir()
    logger.info("%s / %s / seed %d -> %s", run.experiment.name, method_name, run.seed, out)
    path = Path(run.input_data) if run.input_data is not None else prepare_data(run)
    problem = load_problem(run, path)
    identity = {"experiment": run.experiment.name, "method": method_name,
                "label": run.method.label(), "seed": run.seed}
    info = {**identity, "scale": run.scale.name, "budget_s": run.budget_s}
    about = {"model_args": dict(run.experiment.model_args),
             "data": {"path": str(path), "image_dir": run.data.image_dir,
                      "description": describe_data(run), **problem.meta},
             "config": resolved_config, "config_sha256": config_sha256(resolved_config),
             "environment": environment(),
             "resources": resources()}
    with stop_on_signals() as stop, staged_dir(out) as work:
        trace = TraceWriter(work / "trace.csv", identity=identity)
        try:
            facts = _fit(run, problem, work, trace, stop)
        except BaseException as error:
            info.update(status=f"stopped early: {type(error).__name__} {error}".strip())
            write_json(work / "info.json", {**info, "checkpoints": len(trace.rows),
                                            "total_s": time.perf_counter() - start, **about})
            raise
        about["resources"] = resources()
        info.update(status=stop() or "finished", **facts,
                    final_heldout_lpd=(trace.last or {}).get("heldout_lpd"),
                    checkpoints=len(trace.rows), total_s=time.perf_counter() - start, **about)
        write_json(work / "info.json", info)
        if stop.signum is not None:
            raise Interrupted(stop.signum, (
                f"{stop()}: stopped at iteration {facts['iterations']} after "
                f"{len(trace.rows)} checkpoints; kept in {partial_path(out)} ({out} was not "
                f"written); rerun to redo it"))
    logger.info("done: %d iterations; %s", facts["iterations"], wall_clock_split(info))
    return out


def wall_clock_split(info: dict[str, Any]) -> str:
    """How a run's wall-clock seconds divided, from its ``info.json`` facts (``total_s``,
    ``compile_s``, ``wall_s``: the clock, ``checkpoint_s``), e.g. ``wall-clock 236.1 s =
    19.0 s compiling + 15.0 s inference (the clock) + 200.2 s scoring and writing
    checkpoints + 1.9 s loading data and the rest``."""
    parts = {"compiling": info["compile_s"], "inference (the clock)": info["wall_s"],
             "scoring and writing checkpoints": info["checkpoint_s"]}
    rest = info["total_s"] - sum(parts.values())
    return (f"wall-clock {info['total_s']:.1f} s = "
            + " + ".join(f"{seconds:.1f} s {what}" for what, seconds in parts.items())
            + f" + {rest:.1f} s loading data and the rest")
