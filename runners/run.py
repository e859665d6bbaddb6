"""One run end to end: data -> model -> runner -> trace.csv, posterior_mean.npz, info.json."""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any

import jax

import models

from .advi_runner import run_advi
from .config import AdviConfig, Config
from .data import load_problem, prepare_data
from .files import write_json
from .mcmc_runner import run_mcmc
from .paths import run_dir
from .posterior import PosteriorMean
from .provenance import environment
from .scoring import make_log_likelihood
from .trace import TraceWriter

logger = logging.getLogger(__name__)


def execute(run: Config, resolved_config: dict[str, Any]) -> Path:
    """Runs ``run`` and writes its trace.csv and posterior_mean.npz (per checkpoint, see
    :mod:`runners.posterior`) and info.json (at the end).

    Args:
        run: the checked config (:func:`runners.config.to_run`).
        resolved_config: the same config as plain containers, recorded in info.json.

    Returns:
        The run's output folder.
    """
    start = time.perf_counter()
    method_name = run.method.run_name()
    out = run_dir(run.results_dir, run.experiment.name, method_name, run.seed)
    logger.info("%s / %s / seed %d -> %s", run.experiment.name, method_name, run.seed, out)
    path = prepare_data(run)
    problem = load_problem(run, path)
    module = models.get(run.experiment.model)
    trace = TraceWriter(
        out / "trace.csv",
        identity={"experiment": run.experiment.name, "method": method_name,
                  "label": run.method.label(), "seed": run.seed},
    )
    runner = run_advi if isinstance(run.method, AdviConfig) else run_mcmc
    model = functools.partial(module.model, **run.experiment.model_args)
    facts = runner(
        model,
        problem.train,
        run.method,
        rng_key=jax.random.PRNGKey(run.seed),
        budget_s=run.budget_s,
        log_likelihood=make_log_likelihood(module, problem.heldout),
        trace=trace,
        posterior_mean=PosteriorMean(out / "posterior_mean.npz"),
    )
    final = trace.last or {}
    info = {
        "experiment": run.experiment.name,
        "method": method_name,
        "label": run.method.label(),
        "seed": run.seed,
        "scale": run.scale.name,
        "budget_s": run.budget_s,
        **facts,
        "final_heldout_lpd": final.get("heldout_lpd"),
        "checkpoints": len(trace.rows),
        "total_s": time.perf_counter() - start,
        "model_args": dict(run.experiment.model_args),
        "data": {"path": str(path), "image_dir": run.data.image_dir, **problem.meta},
        "config": resolved_config,
        "environment": environment(),
    }
    write_json(out / "info.json", info)
    logger.info("done: %d iterations, %.2f s on the clock, %.2f s compiling, %.2f s in all",
                facts["iterations"], facts["wall_s"], facts["compile_s"], info["total_s"])
    return out
