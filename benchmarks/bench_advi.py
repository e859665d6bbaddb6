"""Speed of ADVI: iteration cost and cold starts, through the public API of ``advi`` only.

Measures, in one run (see benchmarks/README.md):

(a) iteration cost on E1 (ARD regression, N = 10,000 rows, D = 250 regressors, K = 501):
    seconds per iteration of ``advi.algorithm(...).step`` (jit-compiled, n steps in one
    ``lax.fori_loop``, the data passed as an argument) / seconds of one jitted
    ``vmap(grad(log_density))`` call at the same M draws, M = 1 and 10, for the step of
    each preset (Stan's step-size sequence; preconditioned Adam); target <= 1.3; and the
    same step / one step of NumPyro's SVI (AutoNormal guide, Adam, M particles, the same
    compiled loop); target <= 1. Also, for
    information: ``advi.fit``'s own loop (``result.wall_s / max_iter`` at eta = 0.1, one
    ELBO at the end), and the redraw check: ``advi.elbo_grad`` (its draws inside a
    ``lax.while_loop`` that redraws non-finite draws) against the same estimate from the
    same draws computed with a plain ``vmap(value_and_grad)``.
(b) E1 cold, in a fresh process: ``advi.fit(..., preset=...)`` to a result plus 1,000
    draws (target < 3 s for "robust"; Stan's ADVI: 4.9-8.4 s), and the held-out log
    predictive density from those draws against NUTS's -1.423 (target: within 0.01).
(c) eight schools (non-centred) cold, in a fresh process: the first ``advi.fit`` to a
    result (target <= 3 s including compilation) and a second fit in the same process with
    another seed and other data of the same shapes (target <= 1 s), for both presets.

Every fresh process of (b) and (c) runs three times with a new, empty user cache folder
(``XDG_CACHE_HOME``; ``JAX_COMPILATION_CACHE_DIR`` unset), where the first ``advi.fit``
keeps JAX's persistent compilation cache by default: "cold" (nothing cached yet; the targets are
checked here), "warm" (what the cold run left) and "off" (``ADVI_COMPILATION_CACHE=0``).
(b) also checks its 3-s target on the warm fresh process, the analogue of Stan's timings
"build excluded" (a compiled Stan model is reused across processes, as the cache is here).
With ``--cmdstan-binary`` (a compiled ``benchmarks/stan/linreg_ard.stan``), (b) also runs
Stan's own ADVI on the same data (:mod:`cmdstan_advi`) and checks the issue's target on
this machine: our robust fit + 1,000 draws below half of Stan's median, cold and warm.
Each of the ``--cold-runs`` rounds runs our fresh processes and then ``--stan-runs`` of
Stan's, so each ratio compares runs minutes apart; the target is checked on the median
ratio over the rounds. With ``--baseline REV`` (a git revision of this repository,
checked out by :mod:`baseline_code`), each round of (b) also runs that revision's robust
fit, cold and warm, alternated with ours, and checks that the speed is kept: our time over
its, in the same round, at most 1.1 (median over the rounds; identical code measures
0.88-1.05). Timings taken hours apart compare machines as much as code; these are
minutes apart.

    python benchmarks/bench_advi.py            # about 7 minutes on 2 CPU cores
    python benchmarks/bench_advi.py --quick    # fewer iterations and repeats
    python benchmarks/bench_advi.py --parts b --cmdstan-binary benchmarks/stan/linreg_ard
    python benchmarks/bench_advi.py --parts b --cold-runs 5 --baseline c6d475a
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import baseline_code
import bench_common as common
import cmdstan_advi

TARGET_RATIO = 1.3
TARGET_SVI = 1.0
TARGET_COLD_S = 3.0
TARGET_SECOND_S = 1.0
NUTS_LPD = -1.423
TARGET_LPD_GAP = 0.01
STAN_COLD_S = "4.9-8.4"
TARGET_STAN_RATIO = 0.5
TARGET_BASELINE = 1.1
"""--baseline's target, ours / its: identical code measured 0.88-1.05 on the median of 5
rounds (2 cores, two runs of ``--baseline HEAD``), so a target of 1 would fail at random."""
ETA = 0.1
PRESETS = ("stan", "robust")

Timed = Callable[[int], float]
"""``timed(n) -> seconds`` for n iterations, compiled before the first timing."""


# ----------------------------------------------------------------------------------------
# (a) Timed loops: the denominator, the library's step and loop, the redraw comparison
# ----------------------------------------------------------------------------------------


def loop_timer(body: Callable, carry: Any, data: Any, check: Callable | None = None) -> Timed:
    """n trips of ``carry = body(i, carry, data)`` in one jitted ``lax.fori_loop`` (the data
    an argument, the trip count a run-time value: one compilation for every n).
    ``check(carry, n)`` sees the final carry of every timing (e.g. to refuse a failed ADVI
    state)."""
    import jax

    @jax.jit
    def loop(carry: Any, data: Any, n: Any) -> Any:
        return jax.lax.fori_loop(0, n, lambda i, c: body(i, c, data), carry)

    jax.block_until_ready(loop(carry, data, 1))

    def timed(n: int) -> float:
        start = time.perf_counter()
        out = jax.block_until_ready(loop(carry, data, n))
        seconds = time.perf_counter() - start
        if check is not None:
            check(out, n)
        return seconds

    return timed


def grad_call_timer(target: Any, M: int) -> Timed:
    """The denominator of (a): n calls of one jitted ``vmap(grad(log_density))`` at M draws
    (each call dispatched from Python, the data an argument)."""
    import jax

    grad = jax.jit(jax.vmap(jax.grad(target.log_density_fn), in_axes=(0, 0, None)))
    zeta = 0.1 * jax.random.normal(jax.random.PRNGKey(2), (M, target.dim))
    keys = jax.random.split(jax.random.PRNGKey(1), M)
    jax.block_until_ready(grad(zeta, keys, target.data))

    def timed(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            out = grad(zeta, keys, target.data)
        jax.block_until_ready(out)
        return time.perf_counter() - start

    return timed


def grad_loop_timer(target: Any, M: int) -> Timed:
    """The same gradient n times in one compiled loop (no dispatch); each gradient moves the
    point a little so that XLA cannot hoist it out of the loop."""
    import jax

    grad = jax.vmap(jax.grad(target.log_density_fn), in_axes=(0, 0, None))
    keys = jax.random.split(jax.random.PRNGKey(1), M)
    zeta = 0.1 * jax.random.normal(jax.random.PRNGKey(2), (M, target.dim))
    return loop_timer(lambda i, z, data: z + 1e-9 * grad(z, keys, data), zeta, target.data)


def step_timer(target: Any, M: int, preset: str, stats: dict | None = None) -> Timed:
    """n iterations of ``advi.algorithm(...).step`` with the step of ``preset`` (its
    optimiser and preconditioning, ``advi.PRESETS``), mean-field, eta = 0.1, from its
    ``init``, gradient only (``with_elbo=False``, as :func:`advi.fit` runs its steps).
    ``stats["redraws"]`` gets the non-finite draws redrawn per step (``StepInfo.redraws``)."""
    import jax

    import advi

    o = advi.PRESETS[preset]
    key = jax.random.PRNGKey(0)
    alg = advi.algorithm(target, family="meanfield", optimizer=o.optimizer, grad_samples=M,
                         precondition=o.precondition, with_elbo=False)
    state = alg.init(key)

    def body(i: Any, carry: Any, data: Any) -> Any:
        s, info = alg.step(carry[0], jax.random.fold_in(key, i), ETA, data)
        return s, carry[1] + info.redraws

    def check(carry: Any, n: int) -> None:
        s, redraws = carry
        if bool(s.failed):
            raise RuntimeError(f"the step ({preset}) failed at iteration {int(s.iteration)}")
        if stats is not None:
            stats["redraws"] = int(redraws) / n

    return loop_timer(body, (state, jax.numpy.zeros((), "int32")), target.data, check)


def svi_step_timer(model: Any, train: tuple, M: int) -> Timed:
    """n steps of NumPyro's own ADVI: ``SVI(model, AutoNormal(model), Adam(eta = 0.1),
    Trace_ELBO(num_particles=M, vectorize_particles=True)).update`` in one compiled loop,
    the data an argument. The library's step should cost no more (NumPyro 0.22's
    ``numpyro.infer.SVI``, ``numpyro.infer.autoguide.AutoNormal``)."""
    import jax
    import numpyro
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal

    svi = SVI(model, AutoNormal(model), numpyro.optim.Adam(ETA),
              Trace_ELBO(num_particles=M, vectorize_particles=True))
    state = svi.init(jax.random.PRNGKey(0), *train)
    return loop_timer(lambda i, s, data: svi.update(s, *data)[0], state, train)


def plain_meanfield_grad(log_density: Callable, params: Any, rng_key: Any, M: int) -> Any:
    """``advi.elbo_grad``'s mean-field estimate (paper Eq. 6) without its redraw loop: the
    same draws (the same key splits as the loop's first trip), one ``vmap(value_and_grad)``.
    Returns ``(elbo, grad)`` with grad a ``MeanFieldParams``; for the redraw comparison."""
    import jax
    import jax.numpy as jnp

    import advi

    _, eps_key, batch_key = jax.random.split(rng_key, 3)
    eps = jax.random.normal(eps_key, (M, params.mu.shape[-1]), params.mu.dtype)
    sigma = jnp.exp(params.omega)
    value, g = jax.vmap(jax.value_and_grad(log_density))(
        params.mu + sigma * eps, jax.random.split(batch_key, M))
    grad = advi.MeanFieldParams(g.mean(0), (g * eps).mean(0) * sigma + 1.0)
    entropy = jnp.sum(params.omega) + 0.5 * params.mu.shape[-1] * jnp.log(2 * jnp.pi * jnp.e)
    return value.mean() + entropy, grad


def estimator_timer(target: Any, M: int, plain: bool) -> Timed:
    """n gradient estimates at M draws (a new key each, so none can be hoisted out of the
    loop) at the initial parameters, summed: through ``advi.elbo_grad`` (redraw
    while_loop) or :func:`plain_meanfield_grad` (none). The parameters stay put, so that
    neither wanders where draws turn non-finite and ``elbo_grad`` would redraw."""
    import jax

    import advi

    family = advi.get_family("meanfield")
    key = jax.random.PRNGKey(0)
    params = advi.algorithm(target).init(key).params

    def body(i: Any, total: Any, data: Any) -> Any:
        def log_density(zeta: Any, batch_key: Any) -> Any:
            return target.log_density_fn(zeta, batch_key, data)

        k = jax.random.fold_in(key, i)
        if plain:
            grad = plain_meanfield_grad(log_density, params, k, M)[1]
        else:
            grad = advi.elbo_grad(log_density, family, params, k, M).grad
        return jax.tree.map(jax.numpy.add, total, grad)

    return loop_timer(body, jax.tree.map(jax.numpy.zeros_like, params), target.data)


def same_draws_gap(target: Any, M: int) -> float:
    """Largest |difference| between ``advi.elbo_grad`` and :func:`plain_meanfield_grad` at
    one key: 0 (to rounding) shows the comparison times the same computation."""
    import jax
    import jax.numpy as jnp

    import advi

    key = jax.random.PRNGKey(3)
    params = advi.algorithm(target).init(key).params
    a = advi.elbo_grad(target.log_density, advi.get_family("meanfield"), params, key, M)
    _, b = plain_meanfield_grad(target.log_density, params, key, M)
    diffs = jax.tree.map(lambda x, y: jnp.max(jnp.abs(x - y) / (1e-6 + jnp.abs(y))), a.grad, b)
    return float(max(jax.tree.leaves(diffs)))


def fit_loop_timer(model: Any, args: tuple, M: int, eval_elbo: int | None = None,
                   **fit_options: Any) -> Timed:
    """``advi.fit``'s own loop: ``result.wall_s`` (compilation excluded) of a fit with
    preset "stan", eta = 0.1 and ``max_iter = n`` iterations, Stan's 100-draw ELBO every
    ``eval_elbo`` of them (None: once, at the end); ``fit_options`` go to ``advi.fit``."""
    import jax

    import advi

    def timed(n: int) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "max_iter reached"
            result = advi.fit(model, *args, rng_key=jax.random.PRNGKey(0), grad_samples=M,
                              eta=ETA, max_iter=n, eval_elbo=eval_elbo or n, khat_samples=0,
                              **fit_options)
        if result.num_iterations != n:
            raise RuntimeError(f"advi.fit stopped at iteration {result.num_iterations}")
        return result.wall_s

    timed(eval_elbo or 2)  # compiles (once per process and configuration)
    return timed


def make_timers(target: Any, M: int, fit: Timed, stats: dict, svi: Timed
                ) -> dict[str, Timed]:
    """Every timed loop of (a) at M draws; ``fit`` is :func:`fit_loop_timer`'s and ``svi``
    :func:`svi_step_timer`'s; ``stats[preset]`` gets the steps' redraws
    (:func:`step_timer`)."""
    return {
        "grad call": grad_call_timer(target, M),
        "grad loop": grad_loop_timer(target, M),
        "step stan": step_timer(target, M, "stan", stats.setdefault("stan", {})),
        "step robust": step_timer(target, M, "robust", stats.setdefault("robust", {})),
        "fit loop": fit,
        "elbo_grad": estimator_timer(target, M, plain=False),
        "plain grad": estimator_timer(target, M, plain=True),
        "svi step": svi,
    }


def measure(timers: dict[str, Timed], iters: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per iteration, ``repeats`` times each, the timers interleaved repeat by repeat
    (so that a burst of other load hits every timer alike)."""
    per_iter: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(repeats):
        for name, timed in timers.items():
            per_iter[name].append(timed(iters) / iters)
    return per_iter


# ----------------------------------------------------------------------------------------
# (b), (c) Fresh processes
# ----------------------------------------------------------------------------------------


def import_advi(path: str | None) -> Any:
    """``import advi``, from the folder ``path`` when given (``--baseline``'s checkout,
    ahead of this checkout on ``sys.path``).

    Raises:
        ImportError: ``advi`` was loaded from somewhere else.
    """
    if path is not None:
        sys.path.insert(0, path)
    import advi

    if path is not None and not Path(advi.__file__).is_relative_to(path):
        raise ImportError(f"advi came from {advi.__file__}, not from the baseline at {path}")
    return advi


def child_e1(args: argparse.Namespace) -> dict:
    """(b): import, E1 data, ``advi.fit(preset=...)``, 1,000 draws, held-out lpd."""
    start = time.perf_counter()
    import jax

    advi = import_advi(args.advi_path)
    out = {"import_s": time.perf_counter() - start}
    model, train, heldout = common.e1_problem(args.seed, args.num_train, args.num_features)
    jax.block_until_ready((train, heldout))
    start = time.perf_counter()
    result = advi.fit(model, *train, rng_key=jax.random.PRNGKey(args.seed), preset=args.preset)
    out["fit_s"] = time.perf_counter() - start
    out["cache_dir"] = cache_in_use()
    start = time.perf_counter()
    draws = jax.block_until_ready(result.sample(jax.random.PRNGKey(1), 1000))
    out["sample_s"] = time.perf_counter() - start
    out["lpd"] = common.heldout_lpd(draws, *heldout)
    return {**out, **summary(result)}


def child_schools(args: argparse.Namespace) -> dict:
    """(c): import, then two fits of eight schools in one process (another seed and other
    data of the same shapes for the second)."""
    start = time.perf_counter()
    import jax
    import jax.numpy as jnp

    import advi

    out = {"import_s": time.perf_counter() - start}
    for run, data_seed in ((1, None), (2, 1)):
        y, sigma = (jnp.asarray(a) for a in common.eight_schools_data(data_seed))
        start = time.perf_counter()
        result = advi.fit(common.eight_schools, y, sigma, preset=args.preset,
                          rng_key=jax.random.PRNGKey(run))
        jax.block_until_ready(result.params)
        out[f"fit{run}_s"] = time.perf_counter() - start
        out["cache_dir"] = cache_in_use()
        out.update({f"{k}{run}": v for k, v in summary(result).items()})
    return out


def cache_in_use() -> str:
    """The folder of JAX's persistent compilation cache (after a fit: the first fit of a
    process turns it on), or "off"."""
    import jax

    return jax.config.jax_compilation_cache_dir or "off"


def summary(result: Any) -> dict:
    """The numbers of an ``ADVIResult`` the report prints."""
    return {"compile_s": result.compile_s, "wall_s": result.wall_s,
            "iterations": result.num_iterations, "reason": result.convergence_reason,
            "start": result.start}


CACHES = ("cold", "warm", "off")
"""How a fresh process finds the compilation cache (:func:`run_child`)."""

BASELINE_CACHES = ("cold", "warm")
"""The caches of ``--baseline``'s fresh processes (the robust preset only)."""


def run_child(kind: str, preset: str, cache: str, cache_home: str,
              args: argparse.Namespace, advi_path: Path | None = None) -> dict:
    """Run ``kind`` ("e1" or "schools") in a fresh interpreter and return its JSON answer
    plus the process's own seconds. Its user cache folder is ``cache_home``
    (``XDG_CACHE_HOME``), where the first ``advi.fit`` puts JAX's persistent compilation
    cache by default; ``cache="off"`` turns that cache off (``ADVI_COMPILATION_CACHE=0``). Any
    cache configured in this environment is dropped. With ``advi_path`` (a
    :func:`baseline_code.checkout`) the child imports that ``advi``, and the row's "code" is
    "baseline" instead of "current"."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "ADVI_COMPILATION_CACHE")}
    env["XDG_CACHE_HOME"] = cache_home
    if cache == "off":
        env["ADVI_COMPILATION_CACHE"] = "0"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind,
               "--preset", preset, "--seed", str(args.seed),
               "--num-train", str(args.num_train), "--num-features", str(args.num_features)]
    if advi_path is not None:
        command += ["--advi-path", str(advi_path)]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    process_s = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child {kind} ({preset}) failed:\n{proc.stderr[-3000:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**answer, "preset": preset, "cache": cache, "process_s": process_s,
            "code": "current" if advi_path is None else "baseline"}


def fresh_processes(kind: str, args: argparse.Namespace, advi_path: Path | None = None,
                    presets: tuple[str, ...] = PRESETS, caches: tuple[str, ...] = CACHES
                    ) -> list[dict]:
    """Per preset, on one new empty user cache folder: a run with the default cache
    ("cold": nothing cached yet), a second on what it left ("warm"), and one with the cache
    off ("off"); ``advi_path`` as :func:`run_child`."""
    rows = []
    for preset in presets:
        with tempfile.TemporaryDirectory(prefix="bench-advi-cache-") as cache_home:
            rows += [run_child(kind, preset, cache, cache_home, args, advi_path)
                     for cache in caches]
    return rows


def round_of_processes(kind: str, args: argparse.Namespace, number: int,
                       baseline: Path | None = None) -> list[dict]:
    """Round ``number``'s fresh processes (:func:`fresh_processes`). With ``baseline`` (a
    :func:`baseline_code.checkout`), that code's robust fit, cold and warm, runs right
    beside ours, before it in odd rounds and after it in even ones, and our other
    processes follow, so that the two codes' fits are seconds apart."""
    if baseline is None:
        return fresh_processes(kind, args)
    pair = [lambda: fresh_processes(kind, args, None, ("robust",), BASELINE_CACHES),
            lambda: fresh_processes(kind, args, baseline, ("robust",), BASELINE_CACHES)]
    rows = [row for run in (pair[::-1] if number % 2 else pair) for row in run()]
    rows += fresh_processes(kind, args, presets=tuple(p for p in PRESETS if p != "robust"))
    return rows + fresh_processes(kind, args, presets=("robust",), caches=tuple(
        c for c in CACHES if c not in BASELINE_CACHES))


def rounds(kind: str, args: argparse.Namespace, stan: Callable[[int], list[dict]] | None = None,
           baseline: Path | None = None) -> tuple[list[dict], list[dict]]:
    """``--cold-runs`` rounds of :func:`round_of_processes`, each followed by
    ``stan(round)`` (Stan's ADVI, with ``--cmdstan-binary``), so that ours and Stan's are
    timed minutes apart, under the same load; every row is tagged with its round. Returns
    (ours, Stan's); with ``baseline``, ours holds both codes' rows, told apart by their
    "code"."""
    ours, theirs = [], []
    for number in range(args.cold_runs):
        ours += [{**row, "round": number}
                 for row in round_of_processes(kind, args, number, baseline)]
        if stan is not None:
            theirs += [{**row, "round": number} for row in stan(number)]
    return ours, theirs


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------

Verdict = tuple[str, float, str, float]
"""``(label, value, op, goal)`` of one target; op is "<=" or "<"."""

LABELS = {
    "grad call": "gradient, one jitted call (denominator)",
    "grad loop": "gradient inside a compiled loop",
    "step stan": "algorithm step, preset stan's",
    "step robust": "algorithm step, preset robust's",
    "fit loop": "advi.fit loop (stan, 1 ELBO at the end)",
    "elbo_grad": "advi.elbo_grad (redraw while_loop)",
    "plain grad": "same draws, plain vmap(value_and_grad)",
    "svi step": "NumPyro SVI step (AutoNormal, Adam)",
}


def met(v: Verdict) -> bool:
    """Whether a target is met."""
    _, value, op, goal = v
    return value <= goal if op == "<=" else value < goal


RATIOS = (("step stan", "grad call", TARGET_RATIO), ("step robust", "grad call", TARGET_RATIO),
          ("step stan", "svi step", TARGET_SVI), ("step robust", "svi step", TARGET_SVI),
          ("fit loop", "grad call", None), ("step stan", "grad loop", None),
          ("elbo_grad", "plain grad", None), ("plain grad", "grad loop", None))
"""The ratios of (a): (numerator, denominator, target or None for information)."""


def paired_ratios(per_iter: dict[str, list[float]], num: str, den: str) -> list[float]:
    """``num`` / ``den`` repeat by repeat: the two were timed in the same interleaved repeat
    (:func:`measure`), minutes apart from the other repeats, so each pair shares the
    machine's load of the moment and their ratio does not see its drift."""
    return [a / b for a, b in zip(per_iter[num], per_iter[den], strict=True)]


def report_iteration_cost(target: Any, model: Any, train: tuple, args: argparse.Namespace
                          ) -> list[Verdict]:
    """(a): time every loop at M = 1 and 10, print the table, the ratios and the redraw
    check; return the gated targets."""
    stats: dict[int, dict] = {1: {}, 10: {}}
    per_iter = {M: measure(make_timers(target, M, fit_loop_timer(model, train, M), stats[M],
                                       svi_step_timer(model, train, M)),
                           args.iters, args.repeats) for M in (1, 10)}
    print(f"(a) iteration cost, ms per iteration: median (min-max) of {args.repeats} "
          f"interleaved repeats of {args.iters} iterations")
    print(f"  {'':44s}{'M = 1':>24s}{'M = 10':>24s}")
    for name, label in LABELS.items():
        cells = "".join(f"{1e3 * statistics.median(per_iter[M][name]):9.3f} "
                        f"({1e3 * min(per_iter[M][name]):.3f}-"
                        f"{1e3 * max(per_iter[M][name]):.3f})".rjust(24) for M in (1, 10))
        print(f"  {label:44s}{cells}")
    print("  non-finite draws redrawn per step (M = 1, M = 10): " + "; ".join(
        f"{p} {stats[1][p]['redraws']:.3g}, {stats[10][p]['redraws']:.3g}" for p in PRESETS))
    verdicts = report_ratios(per_iter)
    print(f"  same draws: max relative |advi.elbo_grad - plain| = "
          f"{same_draws_gap(target, 10):.1e} (M = 10)")
    print()
    return verdicts


def report_ratios(per_iter: dict[int, dict[str, list[float]]]) -> list[Verdict]:
    """Print each ratio of :data:`RATIOS` at M = 1 and 10 (``per_iter[M][timer]``: seconds
    per iteration, one per repeat) as the median of its paired ratios (:func:`paired_ratios`)
    with their range, and return the gated targets, checked on that median."""
    print(f"  ratios (median of the repeats' paired ratios (min-max)){'M = 1':>10s}"
          f"{'M = 10':>22s}")
    verdicts = []
    for num, den, goal in RATIOS:
        pairs = {M: paired_ratios(per_iter[M], num, den) for M in (1, 10)}
        cells = "".join(f"{statistics.median(pairs[M]):9.3f} ({min(pairs[M]):.3f}-"
                        f"{max(pairs[M]):.3f})".rjust(22) for M in (1, 10))
        tag = "info" if goal is None else f"target <= {goal}"
        print(f"  {num + ' / ' + den:42s}{cells}   {tag}")
        if goal is not None:
            verdicts += [(f"(a) {num} / {den}, M = {M}", statistics.median(pairs[M]), "<=",
                          goal) for M in (1, 10)]
    return verdicts


@contextlib.contextmanager
def stan_runner(args: argparse.Namespace) -> Iterator[Callable[[int], list[dict]] | None]:
    """(b), with ``--cmdstan-binary``: ``run(round)`` runs Stan's own ADVI on the same E1
    data ``--stan-runs`` times (seeds go on from round to round), timed and scored as ours
    (:mod:`cmdstan_advi`); None without a binary."""
    if args.cmdstan_binary is None:
        yield None
        return
    _, train, heldout = common.e1_problem(args.seed, args.num_train, args.num_features)
    with tempfile.TemporaryDirectory(prefix="bench-advi-stan-") as folder:
        data = cmdstan_advi.write_data(*train, Path(folder) / "e1.json")

        def run(number: int) -> list[dict]:
            rows = []
            for seed in range(number * args.stan_runs + 1, (number + 1) * args.stan_runs + 1):
                row = cmdstan_advi.run_variational(args.cmdstan_binary, data, Path(folder),
                                                   seed)
                draws = cmdstan_advi.read_draws(row.pop("csv"))
                rows.append({**row, "seed": seed, "lpd": common.heldout_lpd(draws, *heldout)})
            return rows

        yield run


def report_stan(rows: list[dict], ours: list[dict]) -> list[Verdict]:
    """(b), Stan's lines: each run, and each robust fresh process's TOTAL over the median of
    Stan's runs in the same round; the targets (below half, cold and warm cache) are checked
    on the median of these ratios over the rounds."""
    if not rows:
        return []
    print("  Stan's ADVI on this machine (CmdStan variational, its defaults, "
          "output_samples=1000; from its first gradient timing to exit):")
    for r in rows:
        print(f"  round {r['round']}, stan-cmdstan seed {r['seed']}: {r['fit_s']:6.2f} s "
              f"(process {r['process_s']:.2f}), {r['iterations']} iterations, "
              f"{'converged' if r['converged'] else 'NOT converged'}, lpd {r['lpd']:.4f}")
    median = {n: statistics.median(r["fit_s"] for r in rows if r["round"] == n)
              for n in {r["round"] for r in rows}}
    verdicts = []
    for cache in ("cold", "warm"):
        ratios = []
        for r in ours:
            if r["preset"] == "robust" and r["cache"] == cache:
                ratios.append((r["fit_s"] + r["sample_s"]) / median[r["round"]])
                print(f"  round {r['round']}: robust {cache} TOTAL / Stan's median "
                      f"{median[r['round']]:.2f} s: {ratios[-1]:.3f}")
        verdicts.append((f"(b) E1 robust {cache}-cache fit + 1,000 draws / Stan's ADVI on "
                         f"this machine (median of {len(ratios)} rounds)",
                         statistics.median(ratios), "<", TARGET_STAN_RATIO))
    return verdicts


def report_baseline(rows: list[dict], baseline: str) -> list[Verdict]:
    """(b) with ``--baseline``: in each round, the current code's robust fit + 1,000 draws
    over the baseline's, cold and warm cache; the target (:data:`TARGET_BASELINE`: speed
    kept) is checked on the median of these ratios over the rounds."""
    robust = {(r["code"], r["cache"], r["round"]): r["fit_s"] + r["sample_s"]
              for r in rows if r["preset"] == "robust"}
    print(f"(b) E1 robust fit + 1,000 draws, this code / the code at --baseline {baseline}, "
          "fresh processes alternated in each round. The baseline's:")
    print_fresh_processes([r for r in rows if r["code"] == "baseline"])
    verdicts = []
    for cache in BASELINE_CACHES:
        pairs = [(n, robust[("current", cache, n)], old)
                 for (code, c, n), old in sorted(robust.items())
                 if code == "baseline" and c == cache]
        if not pairs:
            continue
        for n, current, old in pairs:
            print(f"  round {n}, {cache}: {current:.2f} s / {old:.2f} s = {current / old:.3f}")
        verdicts.append((f"(b) E1 robust {cache}-cache fit + 1,000 draws / the same at "
                         f"{baseline} (median of {len(pairs)} rounds)",
                         statistics.median(c / o for _, c, o in pairs), "<=", TARGET_BASELINE))
    print()
    return verdicts


def print_fresh_processes(rows: list[dict]) -> None:
    """(b)'s table: one line per fresh process."""
    print(f"  {'round':5s} {'preset':7s} {'cache':5s} {'import':>7s} {'compile':>8s} "
          f"{'optim':>6s} {'fit':>6s} {'sample':>7s} {'TOTAL':>6s} {'process':>8s} {'lpd':>8s} "
          f"{'gap':>7s}  iterations, stop, start")
    for r in rows:
        total, gap = r["fit_s"] + r["sample_s"], abs(r["lpd"] - NUTS_LPD)
        print(f"  {r['round']:5d} {r['preset']:7s} {r['cache']:5s} {r['import_s']:7.2f} "
              f"{r['compile_s']:8.2f} {r['wall_s']:6.2f} {r['fit_s']:6.2f} "
              f"{r['sample_s']:7.2f} {total:6.2f} {r['process_s']:8.2f} {r['lpd']:8.4f} "
              f"{gap:7.4f}  {r['iterations']}, {r['reason']}, {r['start']}")


def report_e1(rows: list[dict]) -> list[Verdict]:
    """(b): one line per fresh process; targets for the robust preset's runs, over the
    rounds: the median TOTAL, cold and warm cache (warm: the analogue of Stan's timings
    "build excluded"), and the largest lpd gap."""
    print(f"(b) E1 cold, fresh process: advi.fit(preset) + result.sample(key, 1000); "
          f"held-out lpd vs NUTS {NUTS_LPD}")
    print_fresh_processes(rows)
    robust = [r for r in rows if r["preset"] == "robust"]
    verdicts = []
    for cache, label in (("cold", "cold fit"), ("warm", "warm-cache fresh process, fit")):
        totals = [r["fit_s"] + r["sample_s"] for r in robust if r["cache"] == cache]
        if totals:
            verdicts.append((f"(b) E1 robust {label} + 1,000 draws, s (median of "
                             f"{len(totals)})", statistics.median(totals), "<", TARGET_COLD_S))
    if robust:
        verdicts.append(("(b) E1 robust |lpd - NUTS|, nats (largest)",
                         max(abs(r["lpd"] - NUTS_LPD) for r in robust), "<=", TARGET_LPD_GAP))
    print(f"  TOTAL = fit + sample; fit = compile + optim (eta search included) + the rest "
          f"(model probe, k-hat); import and process (interpreter start to exit) not in "
          f"TOTAL. Stan's ADVI: {STAN_COLD_S} s.")
    print_caches(rows)
    print()
    return verdicts


def print_caches(rows: list[dict]) -> None:
    """Where each kind of fresh process kept its compilation cache."""
    seen = {r["cache"]: r["cache_dir"] for r in rows}
    print("  cold: an empty cache; warm: what the cold run left; off: "
          "ADVI_COMPILATION_CACHE=0. Cache folders: "
          + "; ".join(f"{k} {v}" for k, v in seen.items()))


def report_schools(rows: list[dict]) -> list[Verdict]:
    """(c): one line per fresh process; targets for every cold run."""
    print("(c) eight schools (non-centred) in a fresh process: first advi.fit, then a second "
          "with another seed and other data of the same shapes")
    print(f"  {'preset':7s} {'cache':5s} {'import':>7s} {'fit 1':>6s} {'compile':>8s} "
          f"{'optim':>6s} {'fit 2':>6s} {'compile':>8s} {'optim':>6s}  iterations, stop")
    verdicts = []
    for r in rows:
        print(f"  {r['preset']:7s} {r['cache']:5s} {r['import_s']:7.2f} {r['fit1_s']:6.2f} "
              f"{r['compile_s1']:8.2f} {r['wall_s1']:6.2f} {r['fit2_s']:6.2f} "
              f"{r['compile_s2']:8.2f} {r['wall_s2']:6.2f}  {r['iterations1']}, "
              f"{r['reason1']}; {r['iterations2']}, {r['reason2']}")
        if r["cache"] == "cold":
            verdicts += [(f"(c) schools {r['preset']} cold first fit, s", r["fit1_s"], "<=",
                          TARGET_COLD_S),
                         (f"(c) schools {r['preset']} second fit, s", r["fit2_s"], "<=",
                          TARGET_SECOND_S)]
    print()
    return verdicts


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 iterations x 3 repeats")
    parser.add_argument("--iters", type=int, default=None, help="iterations per timing (300)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (5)")
    parser.add_argument("--cold-runs", type=int, default=1,
                        help="rounds of fresh processes per case (1), each followed by "
                        "--stan-runs of Stan's ADVI with --cmdstan-binary")
    parser.add_argument("--parts", default="abc", help="which of a, b, c to run (abc)")
    parser.add_argument("--cmdstan-binary", type=Path, default=None,
                        help="a compiled benchmarks/stan/linreg_ard.stan: (b) also times Stan's "
                        "ADVI on the same data")
    parser.add_argument("--stan-runs", type=int, default=3,
                        help="Stan's ADVI runs per round (3)")
    parser.add_argument("--baseline", default=None, metavar="REV",
                        help="a git revision of this repository: (b) also times its robust "
                        "fit, cold and warm, in each round (speed kept: this code's / its "
                        "<= 1.1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-train", type=int, default=10_000)
    parser.add_argument("--num-features", type=int, default=250)
    parser.add_argument("--child", choices=("e1", "schools"), help=argparse.SUPPRESS)
    parser.add_argument("--advi-path", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--preset", choices=PRESETS, default="stan", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("cold_runs", "stan_runs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: give 1 or more")
    binary = args.cmdstan_binary
    if binary is not None and not (binary.is_file() and os.access(binary, os.X_OK)):
        parser.error(f"--cmdstan-binary {binary} is not an executable file; build one with "
                     "$CMDSTAN/bin/build_model benchmarks/stan/linreg_ard.stan")
    if args.baseline is not None:
        try:
            baseline_code.resolve(common.ROOT, args.baseline)
        except baseline_code.BaselineError as error:
            parser.error(str(error))
    args.iters = args.iters or (100 if args.quick else 300)
    args.repeats = args.repeats or (3 if args.quick else 5)
    return args


def main() -> None:
    """Run the benchmark and print its report (module docstring)."""
    args = parse_args()
    if args.child:
        print(json.dumps((child_e1 if args.child == "e1" else child_schools)(args)))
        return
    # the fresh processes first, while this one has not yet loaded anything heavy
    e1_rows, stan_rows = [], []
    if "b" in args.parts:
        with stan_runner(args) as stan, contextlib.ExitStack() as stack:
            baseline = None if args.baseline is None else stack.enter_context(
                baseline_code.checkout(common.ROOT, args.baseline))
            e1_rows, stan_rows = rounds("e1", args, stan, baseline)
    schools_rows = rounds("schools", args)[0] if "c" in args.parts else []
    import advi

    model, train, _ = common.e1_problem(args.seed, args.num_train, args.num_features)
    print(f"ADVI speed benchmark; E1: N = {args.num_train}, D = {args.num_features} "
          f"(advi_repro.models.linreg_ard, "
          f"advi_repro.models.linreg_ard.simulate({args.seed})); eta = {ETA}, "
          "mean-field")
    common.print_environment()
    print()
    verdicts = []
    if "a" in args.parts:
        target = advi.from_numpyro(model, train, {})
        verdicts += report_iteration_cost(target, model, train, args)
    if e1_rows:
        current = sorted((r for r in e1_rows if r["code"] == "current"), key=lambda r: (
            r["round"], PRESETS.index(r["preset"]), CACHES.index(r["cache"])))
        verdicts += report_e1(current)
        verdicts += report_stan(stan_rows, current)
        if args.baseline is not None:
            verdicts += report_baseline(e1_rows, args.baseline)
    if schools_rows:
        verdicts += report_schools(schools_rows)
    print(f"load average (1, 5, 15 min) at the end: {common.format_load()}")
    for v in verdicts:
        label, value, op, goal = v
        print(f"{common.verdict(met(v))}  {label}: {value:.3f} {op} {goal:g} "
              f"(ratio to target {value / goal:.2f})")


if __name__ == "__main__":
    main()
