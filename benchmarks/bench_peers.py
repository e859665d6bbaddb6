"""ADVI against its peers on the paper's experiments: time and gradients to NUTS's answer.

For each experiment (``conf/experiment/<name>.yaml``, its data made as ``scripts/fit.py``
makes them, at ``--scale``), runs one after another in this process:

- ``advi_stan``, ``advi_robust``: ``advi.fit`` with preset "stan" and "robust" and the
  experiment's own ADVI options (its ``methods`` list), scored by a ``checkpoint=`` hook;
- ``numpyro_svi``: NumPyro's ``SVI`` with ``AutoNormal``, ``numpyro.optim.Adam`` and
  ``Trace_ELBO()`` (one draw per step);
- ``blackjax_meanfield_vi``: BlackJAX's ``meanfield_vi`` (optax Adam, STL gradients);
- ``blackjax_pathfinder``: BlackJAX's ``pathfinder`` (one L-BFGS path), rerun with
  ``maxiter`` 30 (its default), 100, 300, 1000 while the budget lasts, it has not
  converged and its path's draws fit in 1 GiB; a path whose compiled program needs more
  memory than the device has free (XLA's own memory analysis against the GPU's free memory,
  or the host's on a CPU: BlackJAX evaluates the log density at every draw of every path
  point at once, 30 GB on E3) is skipped, its row saying so;
- ``nuts``: NumPyro's NUTS (Stan's defaults, one chain, warmup and draws of the scale).

The BlackJAX methods run on the model's unconstrained log density
(``advi.from_numpyro(...).full_log_density_fn``) and map their draws back with the target's
``constrain_fn``. Every method records a trace of (seconds on its clock, gradient
evaluations, iterations, held-out lpd) every ``--every`` iterations; the held-out lpd is
the mean over held-out observations of log mean_s p(y_n | theta_s) over S draws (the
scale's ``eval_draws``: 1,000 at paper scale, 100 at smoke). Compilation is outside the
clock (compiled ahead of time, or reported apart by ``advi.fit``), and so is scoring. Every
method runs with NumPy's and SciPy's BLAS on one thread, as ``advi.fit`` runs itself
(``advi.host``), so that the scoring's BLAS calls between a peer's chunks leave no spinning
workers on the cores its next chunk computes on.

    python benchmarks/bench_peers.py                                  # E1-E5, paper sizes
    python benchmarks/bench_peers.py --experiments linreg_ard --scale smoke
    python benchmarks/bench_peers.py --experiments gamma_poisson_nmf \\
        --methods advi_robust numpyro_svi nuts --budget-s 600
    python benchmarks/bench_peers.py --experiments gamma_poisson_nmf \\
        --methods advi_robust numpyro_svi --reference -4.5113    # no NUTS: a given lpd

Needs BlackJAX for its two methods (``pip install -e ".[bench]"``). Prints, per experiment,
a markdown table per method and our ratios against each peer (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import bench_common as common
import numpy as np
from threadpoolctl import threadpool_limits

EXPERIMENTS = ("linreg_ard", "election88", "gamma_poisson_nmf", "dirichlet_exponential_nmf",
               "gmm")
"""E1-E5, the experiments this benchmark runs (``conf/experiment/<name>.yaml``)."""

METHODS = ("advi_stan", "advi_robust", "numpyro_svi", "blackjax_meanfield_vi",
           "blackjax_pathfinder", "nuts")
"""The methods, in the order they run; ``nuts`` gives the reference lpd."""

OURS = ("advi_stan", "advi_robust")
TOLERANCE = 0.01
"""Within 1% of the reference: lpd >= reference - 0.01 |reference|."""

PATHFINDER_MAXITER = (30, 100, 300, 1000)
PATHFINDER_DRAWS = 200
"""BlackJAX's default draws per ELBO estimate along the path."""
PATHFINDER_MEMORY = 2**30
"""Bytes the path's ELBO draws may take: BlackJAX scores every point of the path at once,
(maxiter + 1) x 200 draws x K floats (at maxiter 1,000 and K = 6,000, 4.8 GB)."""
SVI_LR = 0.01
MFVI_LR = 0.01
MFVI_DRAWS = 5


@dataclass(frozen=True)
class Point:
    """One checkpoint of a method's trace.

    Attributes:
        seconds: the method's clock (compilation and scoring excluded).
        grads: gradient evaluations of the log density so far.
        iteration: the method's iterations so far (transitions for NUTS).
        lpd: held-out lpd, nats per held-out observation.
    """

    seconds: float
    grads: float
    iteration: int
    lpd: float


@dataclass
class MethodRun:
    """A method's run: its trace, how it stopped and its compile seconds."""

    method: str
    trace: list[Point] = field(default_factory=list)
    stopped: str = ""
    compile_s: float = float("nan")
    from_scratch: bool = False
    """Each checkpoint a run of its own from the start (Pathfinder's paths), not a point
    along one run."""


# --- the pure parts (unit-tested with fake traces) ---------------------------------------


def check_names(given: Iterable[str], valid: Sequence[str], what: str) -> list[str]:
    """``given`` in the order of ``valid``.

    Raises:
        ValueError: a name not in ``valid``; the message lists the valid ones.
    """
    given = list(given)
    unknown = [name for name in given if name not in valid]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(map(repr, unknown))}; valid {what}s: "
                         f"{', '.join(valid)}")
    return [name for name in valid if name in given]


def threshold(reference: float, tolerance: float = TOLERANCE) -> float:
    """The lpd a method must reach: ``reference - tolerance * |reference|``."""
    return reference - tolerance * abs(reference)


def first_within(trace: Sequence[Point], reference: float,
                 tolerance: float = TOLERANCE) -> Point | None:
    """The first checkpoint whose lpd is within ``tolerance`` (relative) of ``reference``,
    or None (never)."""
    bar = threshold(reference, tolerance)
    return next((p for p in trace if math.isfinite(p.lpd) and p.lpd >= bar), None)


def per_iteration(trace: Sequence[Point], from_scratch: bool = False) -> tuple[float, float]:
    """(seconds, gradients) per iteration between the first and the last checkpoint (the
    start's cost, before the first checkpoint, left out); NaN with fewer than two
    checkpoints at distinct iterations. ``from_scratch`` (each checkpoint a run of its
    own): the last run's, over its iterations."""
    if from_scratch and trace and trace[-1].iteration > 0:
        return trace[-1].seconds / trace[-1].iteration, trace[-1].grads / trace[-1].iteration
    if len(trace) < 2 or trace[-1].iteration == trace[0].iteration:
        return float("nan"), float("nan")
    its = trace[-1].iteration - trace[0].iteration
    return ((trace[-1].seconds - trace[0].seconds) / its,
            (trace[-1].grads - trace[0].grads) / its)


def settling(trace: Sequence[Point]) -> float:
    """How long a method ran past its own answer: the gradients at its last checkpoint over
    those at its first checkpoint within 1% of its own final lpd (the start's included; 1:
    it stopped there). NaN without a finite final lpd or any gradient before the first."""
    if not trace or not math.isfinite(trace[-1].lpd):
        return float("nan")
    first = first_within(trace, trace[-1].lpd)
    if first is None or first.grads <= 0:
        return float("nan")
    return trace[-1].grads / first.grads


def speedup(ours: Point | None, peer: Point | None) -> str:
    """The peer's seconds to the threshold over ours (above 1: ours sooner), as text."""
    if ours is None and peer is None:
        return "both never"
    if ours is None:
        return "ours never"
    if peer is None:
        return "peer never"
    if ours.seconds <= 0:
        return "inf"
    return f"{peer.seconds / ours.seconds:.2f}x"


def too_big(stats: Any, available: int) -> str | None:
    """Why a compiled program would not fit in ``available`` bytes, or None where it fits
    or its size is unknown; ``stats``: ``jax.stages.Compiled.memory_analysis()`` (argument,
    output and temporary buffers, bytes), or None where the backend does not report it."""
    if stats is None:
        return None
    needed = (stats.argument_size_in_bytes + stats.output_size_in_bytes
              + stats.temp_size_in_bytes)
    if needed <= available:
        return None
    return (f"skipped: needs {needed / 2**30:.3g} GiB (XLA's memory analysis), "
            f"{available / 2**30:.3g} GiB free")


def available_memory(device_stats: dict[str, Any] | None) -> int:
    """Free bytes where the programs run: an accelerator's ``bytes_limit - bytes_in_use``
    from ``device_stats`` (``jax.Device.memory_stats()``), else (a CPU reports none) the
    free physical memory (POSIX ``sysconf``), or 2**62 where neither is reported."""
    if device_stats and "bytes_limit" in device_stats:
        return int(device_stats["bytes_limit"]) - int(device_stats.get("bytes_in_use", 0))
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2**62


def pathfinder_maxiters(dim: int, memory: int = PATHFINDER_MEMORY) -> list[int]:
    """The ``maxiter`` of :data:`PATHFINDER_MAXITER` whose path of ELBO draws, (maxiter +
    1) x :data:`PATHFINDER_DRAWS` x ``dim`` float32, fits in ``memory`` bytes; at least
    the first (BlackJAX's default)."""
    fits = [m for m in PATHFINDER_MAXITER if (m + 1) * PATHFINDER_DRAWS * dim * 4 <= memory]
    return fits or [PATHFINDER_MAXITER[0]]


def _number(value: float, digits: int = 3) -> str:
    return "" if not math.isfinite(value) else f"{value:.{digits}g}"


def _reached(point: Point | None) -> str:
    return "never" if point is None else f"{point.seconds:.3g} s ({point.grads:,.0f} grads)"


def method_table(runs: Sequence[MethodRun], reference: float | None, floor_ms: float) -> str:
    """The markdown table of one experiment: per method, seconds and gradients per
    iteration, the ratio to the gradient floor (one jitted gradient, ``floor_ms``), seconds
    and gradients to within 1% of ``reference`` (None: no reference), the final lpd and
    how it stopped, and how far past its own answer it ran (:func:`settling`: a rule that
    stops a method by itself should stop it within about twice the gradients it needed)."""
    lines = [f"| method | s/iter | x floor ({floor_ms:.3g} ms) | grads/iter | iterations "
             "| to within 1% of NUTS | final lpd | stopped | stop / own 1% |",
             "| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: |"]
    for run in runs:
        seconds, grads = per_iteration(run.trace, run.from_scratch)
        last = run.trace[-1] if run.trace else None
        reach = ("n/a" if reference is None else _reached(first_within(run.trace, reference)))
        past = _number(settling(run.trace))
        lines.append(
            f"| {run.method} | {_number(seconds)} | {_number(seconds * 1e3 / floor_ms)} "
            f"| {_number(grads)} | {'' if last is None else f'{last.iteration:,}'} | {reach} "
            f"| {'' if last is None else f'{last.lpd:.4f}'} | {run.stopped} "
            f"| {past + 'x' if past else ''} |")
    return "\n".join(lines)


def ratio_table(runs: Sequence[MethodRun], reference: float | None) -> str:
    """Our presets' time to within 1% of ``reference`` against each peer's: the peer's
    seconds over ours (above 1: ours sooner), one row per peer."""
    ours = [run for run in runs if run.method in OURS]
    if reference is None or not ours or len(ours) == len(runs):
        return "(no ratios: they need a reference, one of our presets and a peer)"
    reached = {run.method: first_within(run.trace, reference) for run in runs}
    lines = ["| peer | peer to 1% | " + " | ".join(f"{r.method} sooner by" for r in ours) + " |",
             "| --- | --- | " + " | ".join("---:" for _ in ours) + " |"]
    for peer in runs:
        if peer.method in OURS:
            continue
        cells = [speedup(reached[r.method], reached[peer.method]) for r in ours]
        lines.append(f"| {peer.method} | {_reached(reached[peer.method])} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def reference_lpd(runs: Sequence[MethodRun], given: float | None = None) -> float | None:
    """The lpd every method is timed against: ``given`` (``--reference``, a longer NUTS
    run's, say) when not None, else NUTS's final lpd (all its post-warmup draws), or None
    without a NUTS trace."""
    if given is not None:
        return given
    nuts = next((run for run in runs if run.method == "nuts" and run.trace), None)
    return None if nuts is None else nuts.trace[-1].lpd


# --- the experiment's data, as the workflow makes them ------------------------------------


@dataclass
class Setup:
    """An experiment at a scale: model (its ``model_args`` bound), data, scorer, sizes."""

    name: str
    model: Callable[..., None]
    train: dict[str, Any]
    log_likelihood: Callable[[dict[str, Any]], Any]
    num_heldout: int
    eval_draws: int
    mcmc: tuple[int, int]
    advi_options: dict[str, dict[str, Any]]

    def score(self, draws: dict[str, Any], scores: Any = None) -> float:
        """Held-out lpd of ``draws`` (site -> (S, ...)), added to ``scores`` (a
        ``RunningLogMeanExp``; None: scored alone)."""
        from advi_repro.runners.scoring import RunningLogMeanExp, score_draws

        scores = RunningLogMeanExp() if scores is None else scores
        score_draws(self.log_likelihood, draws, scores)
        return scores.lpd()


def _compose(overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir

    from advi_repro.planning.config import register, to_run
    from advi_repro.planning.paths import checkout_conf

    conf = checkout_conf(__file__)  # this checkout's conf/
    register(conf)
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return to_run(compose("config", overrides))


def _advi_options(base: list[str], methods: list[list[str]]) -> dict[str, dict[str, Any]]:
    """The experiment's first ``method=advi`` and ``method=advi_robust`` entries, as
    ``advi.fit`` options (its own tolerances, iteration caps, checkpoint spacing)."""
    options = {"advi_stan": ["method=advi"], "advi_robust": ["method=advi_robust"]}
    for entry in methods:
        for name, first in (("advi_stan", "method=advi"), ("advi_robust", "method=advi_robust")):
            if entry and entry[0] == first and options[name] == [first]:
                options[name] = list(entry)
    return {name: _compose(base + entry).method.options() for name, entry in options.items()}


def load_setup(name: str, scale: str, seed: int, results_dir: str) -> Setup:
    """The data of ``scripts/fit.py experiment=<name> scale=<scale>``, made under
    ``results_dir`` if missing (``advi_repro.planning.data.prepare_data``; real data from
    the mirror), with the scale's S and MCMC lengths."""
    from advi_repro import models
    from advi_repro.planning.data import load_problem, prepare_data
    from advi_repro.runners.scoring import make_log_likelihood

    base = [f"experiment={name}", f"scale={scale}", f"seed={seed}", f"results_dir={results_dir}"]
    run = _compose(base + ["method=nuts"])
    problem = load_problem(run, prepare_data(run))
    module = models.get(run.experiment.model)
    return Setup(name=name, model=functools.partial(module.model, **run.experiment.model_args),
                 train=dict(problem.train),
                 log_likelihood=make_log_likelihood(module, problem.heldout),
                 num_heldout=problem.num_heldout,
                 eval_draws=run.scale.eval_draws,
                 mcmc=(run.method.num_warmup, run.method.num_samples),
                 advi_options=_advi_options(base, list(run.experiment.methods)))


# --- the methods ----------------------------------------------------------------------------


@dataclass
class Budget:
    """What every method gets: seconds on its clock, checkpoint spacing, iteration cap,
    the seed."""

    seconds: float
    every: int
    max_iter: int
    seed: int


def gradient_floor_ms(target: Any, repeats: int = 50) -> float:
    """Median milliseconds of one jitted gradient of the log density (all the data, at
    zeta = 0), called from Python, compiled first."""
    import jax
    import jax.numpy as jnp

    grad = jax.jit(jax.grad(target.full_log_density_fn))
    zeta = jnp.zeros(target.dim)
    jax.block_until_ready(grad(zeta, target.data))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(grad(zeta, target.data))
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


class _EtaSearch(logging.Handler):
    """Counts the eta search's trials in ``advi``'s log (each runs ``adapt_iter`` steps)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.trials = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.trials += record.getMessage().startswith("eta search: eta=")


def run_ours(setup: Setup, preset: str, budget: Budget) -> MethodRun:
    """``advi.fit`` with the preset and the experiment's options, scored every
    ``budget.every`` iterations by its checkpoint hook, stopped by the budget. Gradients:
    M per iteration, plus the start's (the eta search's trials x adapt_iter x M, the
    Laplace start's L-BFGS steps, a lower bound), added to every checkpoint."""
    import jax

    import advi

    name = f"advi_{preset}"
    options = {**setup.advi_options[name], "checkpoint_every": budget.every}
    resolved = advi.presets.resolve(preset, options)
    run, key = MethodRun(name), jax.random.PRNGKey(budget.seed + 1)

    def hook(info: Any) -> bool:
        draws = info.sample(jax.random.fold_in(key, info.iteration), setup.eval_draws)
        run.trace.append(Point(info.wall_s, info.iteration * resolved.grad_samples,
                               info.iteration, setup.score(draws)))
        return info.wall_s >= budget.seconds

    log, search = logging.getLogger("advi"), _EtaSearch()
    level = log.level
    log.addHandler(search)
    log.setLevel(logging.INFO)
    try:
        with warnings.catch_warnings():  # the end-of-fit checks' warnings: counted below
            warnings.simplefilter("ignore", RuntimeWarning)
            result = advi.fit(setup.model, rng_key=jax.random.PRNGKey(budget.seed),
                              preset=preset, model_kwargs=setup.train, checkpoint=hook,
                              progress_bar=False, **options)
    finally:
        log.removeHandler(search)
        log.setLevel(level)
    steps = re.search(r"(\d+) L-BFGS steps", result.start)
    start = search.trials * resolved.adapt_iter * resolved.grad_samples + (
        int(steps.group(1)) if steps else 0)
    run.trace = [Point(p.seconds, p.grads + start, p.iteration, p.lpd) for p in run.trace]
    reason = result.convergence_reason
    run.stopped = "budget" if reason == "stopped by checkpoint" else reason
    if result.warnings:
        run.stopped += f" ({len(result.warnings)} end-of-fit warnings)"
    run.compile_s = float(result.compile_s)
    return run


def _loop(setup: Setup, budget: Budget, run: MethodRun, chunk: Any, state: Any,
          draw: Callable[[Any, int], dict[str, Any]], grads_per_iter: float) -> MethodRun:
    """Runs ``chunk`` (compiled: ``(state, key) -> state``, ``budget.every`` iterations)
    with the clock on, scoring ``draw(state, i)`` after each, until the budget or
    ``budget.max_iter``."""
    import jax

    seconds, iteration = 0.0, 0
    while True:
        start = time.perf_counter()
        key = jax.random.fold_in(jax.random.PRNGKey(budget.seed), iteration)
        state = jax.block_until_ready(chunk(state, key))
        seconds += time.perf_counter() - start
        iteration += budget.every
        lpd = setup.score(draw(state, iteration))
        run.trace.append(Point(seconds, iteration * grads_per_iter, iteration, lpd))
        if seconds >= budget.seconds or iteration >= budget.max_iter:
            run.stopped = "budget" if seconds >= budget.seconds else "max_iter"
            return run


def run_svi(setup: Setup, budget: Budget, lr: float = SVI_LR) -> MethodRun:
    """NumPyro's SVI: ``AutoNormal`` (its default init and scale), ``numpyro.optim.Adam(lr)``,
    ``Trace_ELBO()`` (one draw, so one gradient per step), ``budget.every`` steps per
    compiled call."""
    import jax
    import numpyro
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal

    guide = AutoNormal(setup.model)
    svi = SVI(setup.model, guide, numpyro.optim.Adam(lr), Trace_ELBO())
    state = svi.init(jax.random.PRNGKey(budget.seed), **setup.train)

    def chunk(state: Any, key: Any) -> Any:
        return jax.lax.fori_loop(0, budget.every,
                                 lambda i, s: svi.update(s, **setup.train)[0], state)

    start = time.perf_counter()
    compiled = jax.jit(chunk).lower(state, jax.random.PRNGKey(0)).compile()
    sample = jax.jit(lambda params, key: guide.sample_posterior(
        key, params, sample_shape=(setup.eval_draws,)))
    run = MethodRun("numpyro_svi", compile_s=time.perf_counter() - start)

    def draw(state: Any, i: int) -> dict[str, Any]:
        return sample(svi.get_params(state), jax.random.PRNGKey(10_000_000 + i))

    return _loop(setup, budget, run, compiled, state, draw, 1.0)


def _unconstrained(setup: Setup) -> tuple[Any, Callable[..., Any], Callable[..., Any]]:
    """The model's target (:func:`advi.from_numpyro`), its log density on all the data as a
    function of (zeta, data), and the jitted map from draws (S, K) to constrained draws."""
    import jax

    import advi

    target = advi.from_numpyro(setup.model, model_kwargs=setup.train)
    constrain = jax.jit(jax.vmap(target.constrain_fn, in_axes=(0, None)))
    return target, target.full_log_density_fn, constrain


def run_meanfield_vi(setup: Setup, budget: Budget, lr: float = MFVI_LR,
                     draws: int = MFVI_DRAWS) -> MethodRun:
    """BlackJAX's ``meanfield_vi`` from zeta = 0 (its sd e^-2), optax Adam(lr), ``draws``
    draws per step (BlackJAX's ``step`` default), STL gradients."""
    import blackjax
    import jax
    import jax.numpy as jnp
    import optax

    target, log_density, constrain = _unconstrained(setup)
    optimizer = optax.adam(lr)

    def algorithm(data: Any) -> Any:
        return blackjax.meanfield_vi(lambda z: log_density(z, data), optimizer, draws)

    def chunk(state: Any, key: Any, data: Any) -> Any:
        step = algorithm(data).step
        return jax.lax.fori_loop(
            0, budget.every, lambda i, s: step(jax.random.fold_in(key, i), s)[0], state)

    state = algorithm(target.data).init(jnp.zeros(target.dim))
    start = time.perf_counter()
    compiled = jax.jit(chunk).lower(state, jax.random.PRNGKey(0), target.data).compile()
    sample = jax.jit(lambda state, key: blackjax.vi.meanfield_vi.sample(
        key, state, setup.eval_draws))
    run = MethodRun("blackjax_meanfield_vi", compile_s=time.perf_counter() - start)

    def draw(state: Any, i: int) -> dict[str, Any]:
        return constrain(sample(state, jax.random.PRNGKey(10_000_000 + i)), target.data)

    return _loop(setup, budget, run, lambda s, k: compiled(s, k, target.data), state, draw,
                 float(draws))


def run_pathfinder(setup: Setup, budget: Budget) -> MethodRun:
    """BlackJAX's ``pathfinder`` from zeta = 0, one path per ``maxiter`` of
    :func:`pathfinder_maxiters` while the budget lasts, each its own run on the clock
    (compiled first); gradients: its L-BFGS iterations + 1 (line-search evaluations not
    counted, a lower bound)."""
    import blackjax
    import jax
    import jax.numpy as jnp

    target, log_density, constrain = _unconstrained(setup)
    run = MethodRun("blackjax_pathfinder", compile_s=0.0, from_scratch=True)
    for maxiter in pathfinder_maxiters(target.dim):
        def approximate(key: Any, data: Any, maxiter: int = maxiter) -> Any:
            state, info = blackjax.vi.pathfinder.approximate(
                key, lambda z: log_density(z, data), jnp.zeros(target.dim),
                num_samples=PATHFINDER_DRAWS, maxiter=maxiter)
            reached = jnp.where(jnp.isfinite(info.path.elbo),
                                jnp.arange(1, maxiter + 2), 0)
            return state, jnp.max(reached)  # L-BFGS iterations: the path's last scored point

        key = jax.random.PRNGKey(budget.seed)
        start = time.perf_counter()
        compiled = jax.jit(approximate).lower(key, target.data).compile()
        run.compile_s += time.perf_counter() - start
        skip = too_big(compiled.memory_analysis(),
                       available_memory(jax.devices()[0].memory_stats()))
        if skip:
            run.stopped = f"maxiter {maxiter} {skip}"
            break
        start = time.perf_counter()
        state, iterations = jax.block_until_ready(compiled(key, target.data))
        seconds = time.perf_counter() - start
        zeta, _ = blackjax.vi.pathfinder.sample(key, state, setup.eval_draws)
        iterations = int(iterations)
        run.trace.append(Point(seconds, iterations + 1, iterations,
                               setup.score(constrain(zeta, target.data))))
        run.stopped = f"one path, maxiter {maxiter}"
        if seconds >= budget.seconds or iterations < maxiter:
            break
    return run


def run_nuts(setup: Setup, budget: Budget, every: int = 50) -> MethodRun:
    """NumPyro's NUTS (functional ``hmc`` API, Stan's defaults, U(-2, 2) start) for the
    scale's warmup and draws, in compiled chunks of ``every`` transitions
    (``advi_repro.runners.mcmc_chunks``); a warmup chunk is scored alone, sampling all
    post-warmup draws so far, as the workflow scores NUTS; gradients: leapfrog steps."""
    import jax
    from numpyro.infer.hmc import hmc
    from numpyro.infer.initialization import init_to_uniform
    from numpyro.infer.util import initialize_model

    from advi_repro.runners.mcmc_chunks import chunk_plan, make_chunk

    num_warmup, num_samples = setup.mcmc
    init_key, chain_key = jax.random.split(jax.random.PRNGKey(budget.seed))
    start = time.perf_counter()
    info = initialize_model(init_key[None], setup.model, model_kwargs=setup.train,
                            dynamic_args=False, init_strategy=init_to_uniform(radius=2.0))
    init_kernel, sample_kernel = hmc(potential_fn=info.potential_fn, algo="NUTS")
    state = jax.jit(functools.partial(init_kernel, num_warmup=num_warmup))(
        jax.tree.map(lambda x: x[0], info.param_info), rng_key=chain_key)
    chunk = jax.jit(make_chunk(sample_kernel, capacity=every, forecast=False)).lower(
        state, np.int32(0), np.float32(0)).compile()
    constrain = jax.jit(jax.vmap(info.postprocess_fn))
    run = MethodRun("nuts", compile_s=time.perf_counter() - start, stopped="finished")
    return _nuts_chunks(setup, budget, run, chunk, state, constrain,
                        chunk_plan(num_warmup, num_samples, every))


def _nuts_chunks(setup: Setup, budget: Budget, run: MethodRun, chunk: Any, state: Any,
                 constrain: Callable[..., Any], plan: Iterable[tuple[str, int]]) -> MethodRun:
    """Runs the NUTS chunks of ``plan`` on the clock, scoring after each, until the end of
    ``plan`` or the budget."""
    import jax

    from advi_repro.runners.scoring import RunningLogMeanExp

    posterior, seconds, grads, plan = RunningLogMeanExp(), 0.0, 0.0, list(plan)
    for n, (phase, length) in enumerate(plan):
        start = time.perf_counter()
        state, count, records = chunk(state, np.int32(length), np.float32(np.inf))
        jax.block_until_ready(state)
        seconds += time.perf_counter() - start
        count = int(count)
        zs = jax.tree.map(lambda x, n=count: np.asarray(x)[:n], records[0])
        grads += float(np.sum(np.asarray(records[3])[:count]))
        lpd = setup.score(constrain(zs), posterior if phase == "sampling" else None)
        run.trace.append(Point(seconds, grads, int(state.i), lpd))
        if seconds >= budget.seconds and n < len(plan) - 1:
            run.stopped = f"budget ({phase})"
            break
    return run


# --- the run ---------------------------------------------------------------------------------


def run_method(method: str, setup: Setup, budget: Budget, reference: float | None = None
               ) -> MethodRun:
    """One method on one experiment; an error ends that method only (its row says why).
    Its line says when it came within 1% of ``reference`` where one is given in advance
    (``--reference``), so that a run cut short keeps each finished method's answer."""
    runners: dict[str, Callable[[], MethodRun]] = {
        "advi_stan": lambda: run_ours(setup, "stan", budget),
        "advi_robust": lambda: run_ours(setup, "robust", budget),
        "numpyro_svi": lambda: run_svi(setup, budget),
        "blackjax_meanfield_vi": lambda: run_meanfield_vi(setup, budget),
        "blackjax_pathfinder": lambda: run_pathfinder(setup, budget),
        "nuts": lambda: run_nuts(setup, budget),
    }
    print(f"  {method} ...", flush=True)
    try:
        with threadpool_limits(limits=1, user_api="blas"):  # as advi.fit runs (advi.host)
            run = runners[method]()
    except Exception as error:  # a peer that fails is reported, not fatal
        run = MethodRun(method, stopped=f"error: {type(error).__name__}: {error}"[:200])
    last = run.trace[-1] if run.trace else None
    print(f"    {run.stopped}; compile {run.compile_s:.1f} s"
          + ("" if last is None else f"; {last.iteration} iterations, {last.seconds:.2f} s, "
             f"lpd {last.lpd:.4f}")
          + ("" if reference is None
             else f"; within 1%: {_reached(first_within(run.trace, reference))}"), flush=True)
    return run


def run_experiment(name: str, methods: Sequence[str], args: argparse.Namespace) -> None:
    """Loads the experiment, runs ``methods`` and prints its two tables."""
    import advi

    setup = load_setup(name, args.scale, args.seed, args.results_dir)
    options = setup.advi_options["advi_stan"]
    every = args.every or int(options.get("checkpoint_every", 100))
    max_iter = int(advi.presets.resolve("stan", options).max_iter)
    budget = Budget(seconds=args.budget_s, every=every, max_iter=max_iter, seed=args.seed)
    target = advi.from_numpyro(setup.model, model_kwargs=setup.train)
    floor_ms = gradient_floor_ms(target)
    print(f"\n## {name} ({args.scale}): K = {target.dim} unconstrained parameters, "
          f"{setup.num_heldout:,} held-out observations, S = {setup.eval_draws} draws, "
          f"checkpoints every {every} iterations, budget {args.budget_s:g} s per method; "
          f"one jitted gradient {floor_ms:.3g} ms\n", flush=True)
    # NUTS first: its final lpd is the reference every other method is timed against
    order = sorted(methods, key=lambda m: m != "nuts")
    runs = {method: run_method(method, setup, budget, args.reference) for method in order}
    runs_in_order = [runs[m] for m in methods]
    reference = reference_lpd(runs_in_order, args.reference)
    source = ("given (--reference)" if args.reference is not None
              else "NUTS's final held-out lpd")
    print(f"\nreference, {source}: {reference if reference is None else f'{reference:.4f}'}"
          f" (within 1%: >= {'n/a' if reference is None else f'{threshold(reference):.4f}'})\n")
    print(method_table(runs_in_order, reference, floor_ms))
    print()
    print(ratio_table(runs_in_order, reference), flush=True)


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (``argv``; None: ``sys.argv``); argparse exits with its
    usage on an unknown option or choice."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS),
                        help=f"any of {', '.join(EXPERIMENTS)} (default: all)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS),
                        help=f"any of {', '.join(METHODS)} (default: all)")
    parser.add_argument("--scale", default="paper", choices=("paper", "smoke"))
    parser.add_argument("--budget-s", type=float, default=300.0,
                        help="seconds on each method's clock (default 300)")
    parser.add_argument("--every", type=int, default=None,
                        help="iterations between checkpoints (default: the experiment's "
                             "checkpoint_every for Stan's preset)")
    parser.add_argument("--seed", type=int, default=0, help="inference seed (default 0)")
    parser.add_argument("--reference", type=float, default=None,
                        help="held-out lpd to time every method against, instead of this "
                             "run's NUTS (one experiment only; default: NUTS's final lpd)")
    parser.add_argument("--matmul-precision", default="highest", choices=("highest", "jax"),
                        help="every method's matrix products at full float32 precision "
                             "(highest, the default: advi.precision.matmul_scope), or at "
                             "JAX's default for the peers (jax: TensorFloat-32 on recent "
                             "NVIDIA GPUs; advi.fit keeps its own full precision)")
    parser.add_argument("--results-dir", default=str(common.ROOT / "results"),
                        help="where the data are made or found (default <repo>/results)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_arguments(argv)
    try:
        experiments = check_names(args.experiments, EXPERIMENTS, "experiment")
        methods = check_names(args.methods, METHODS, "method")
        if args.reference is not None and len(experiments) != 1:
            raise ValueError(f"--reference {args.reference} is one experiment's lpd, but "
                             f"{len(experiments)} experiments were asked for: name one")
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    print("# Peers benchmark")
    common.print_environment()
    from advi.precision import matmul_scope

    full = args.matmul_precision == "highest"  # every method's products in float32
    with matmul_scope() if full else contextlib.nullcontext():
        for name in experiments:
            run_experiment(name, methods, args)
    print(f"\nload average at the end: {common.format_load()}")


if __name__ == "__main__":
    main()
