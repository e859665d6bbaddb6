"""The validation suite: every method on posteriors the library was never tuned on.

For each target of ``suite_targets.py`` (the Inference Gym's targets with ground truth, the
repository's known posteriors, the paper's E0) and each method, ``--seeds`` fits (default
3), each scored against the target's true means and sds on the compared quantities:

- ``rms_z``, ``max_z``: RMS and largest |mean of draws - true mean| / true sd;
- ``log_sd``, ``max_log_sd``: the median and the largest |log(sd of draws / true sd)| over
  the quantities;
- ``warned`` / ``raised``: the fit warned (an ``advi`` RuntimeWarning, ``result.warnings``)
  or raised; ``nonfinite``: some draw was not finite;
- ``cold_s``: the first seed's wall seconds in a new process with JAX's persistent
  compilation cache off (tracing and compilation included; the model's construction and
  imports not); the later seeds' ``wall_s`` reuse that process's compiled functions. Each
  row records ``jobs``, the fits run at a time, and ``cpus``, the CPUs its process was
  pinned to: with ``--jobs`` above 1 each process takes its share of the CPUs as the
  workflow's fits do (``advi_repro.runners.cpus``), since unpinned, XLA's threads meet the
  other fit's on every core (on 2 cores, two unpinned fits at a time made robust's cold
  seconds 1.47x its own alone at the median and NUTS's 1.06x). Cold seconds compare only
  between runs with the same ``jobs`` on an otherwise idle machine.

Methods: ``advi_stan`` and ``advi_robust`` (mean-field), ``advi_robust_fullrank`` (K <=
200), ``svi`` (NumPyro's SVI, ``AutoNormal``, Adam at 0.01, 10,000 steps, Trace_ELBO with
one draw), ``nuts`` (NumPyro's NUTS, 500 warm-up + 500 draws, one chain). Draws: 4,000 from
each approximation, NUTS's 500. A target counts where NUTS's median RMS z is <= 0.15.

Each (target, method) runs in its own process (``--jobs`` at a time); its rows are appended
to ``<out>/rows.jsonl`` as they finish, so an interrupted run resumes where it stopped.

    python benchmarks/bench_suite.py                        # everything, 3 seeds
    python benchmarks/bench_suite.py --fast --seeds 1       # the own targets (no gym)
    python benchmarks/bench_suite.py --targets Banana --methods advi_robust nuts
    python benchmarks/bench_suite.py --write-docs           # the table into docs/library
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import suite_settings
import suite_table
import suite_targets

METHODS = ("advi_stan", "advi_robust", "advi_robust_fullrank", "svi", "nuts")
FULLRANK_MAX_DIM = 200
NUM_DRAWS = 4000
SVI_STEPS, SVI_LR = 10_000, 0.01
NUTS_WARMUP, NUTS_SAMPLES = 500, 500
COLD_ENV = {"JAX_ENABLE_COMPILATION_CACHE": "false", "ADVI_COMPILATION_CACHE": "0"}


def score(draws: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> dict[str, Any]:
    """The scores of draws (S, D) against the truth (D,): rms_z, max_z, log_sd, max_log_sd
    over the finite draws, and whether some draw was not finite (all nan when none is finite)."""
    finite = np.all(np.isfinite(draws), axis=1)
    if not np.any(finite):
        return {"rms_z": math.nan, "max_z": math.nan, "log_sd": math.nan,
                "max_log_sd": math.nan, "nonfinite": True}
    kept = draws[finite]
    z = (kept.mean(0) - mean) / sd
    with np.errstate(divide="ignore"):
        log_sd = np.abs(np.log(kept.std(0) / sd))
    return {"rms_z": float(np.sqrt(np.mean(z**2))), "max_z": float(np.max(np.abs(z))),
            "log_sd": float(np.median(log_sd)), "max_log_sd": float(np.max(log_sd)),
            "nonfinite": not bool(np.all(finite))}


# ----------------------------------------------------------------------------------------
# The methods: each fits a problem with a seed, timing the fit alone on ``clock``
# ----------------------------------------------------------------------------------------


class Fit(NamedTuple):
    """A method's fit: constrained draws (dict of (S, ...) arrays), its warnings, its wall
    seconds (the fit alone: not its draws or k-hat), and for ADVI its start, k-hat, why it
    stopped (``ADVIResult.convergence_reason``) and split R-hat (95%) there (the robust
    preset's; None for the Stan preset's)."""

    draws: dict
    notes: list[str]
    seconds: float
    start: str | None = None
    khat: float | None = None
    stop: str | None = None
    rhat: float | None = None


Clock = Callable[[], float]


def _advi(problem: suite_targets.Problem, seed: int, clock: Clock, **options: Any) -> Fit:
    import jax

    import advi

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        begun = clock()
        result = advi.fit(problem.model, *problem.args, rng_key=jax.random.PRNGKey(seed),
                          progress_bar=False, **options)
        seconds = clock() - begun
        draws = result.sample(jax.random.PRNGKey(seed + 10_000), NUM_DRAWS)
    notes = list(result.warnings) + [
        str(w.message) for w in caught
        if issubclass(w.category, RuntimeWarning) and f"{os.sep}advi{os.sep}" in w.filename
        and str(w.message) not in result.warnings]
    khat, rhat = result.pareto_khat, result.elbo_history.max_rhat
    return Fit(jax.device_get(draws), notes, seconds, result.start,
               None if khat is None else float(khat), result.convergence_reason,
               None if rhat is None or not len(rhat) else float(rhat[-1]))


def _svi(problem: suite_targets.Problem, seed: int, clock: Clock, **_: Any) -> Fit:
    import jax
    from numpyro.infer import SVI, Predictive, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    begun = clock()
    guide = AutoNormal(problem.model)
    svi = SVI(problem.model, guide, Adam(SVI_LR), Trace_ELBO())
    out = svi.run(jax.random.PRNGKey(seed), SVI_STEPS, *problem.args, progress_bar=False)
    params = jax.block_until_ready(out.params)
    seconds = clock() - begun
    draws = Predictive(guide, params=params, num_samples=NUM_DRAWS)(
        jax.random.PRNGKey(seed + 10_000), *problem.args)
    return Fit(jax.device_get(draws), [], seconds)


def _nuts(problem: suite_targets.Problem, seed: int, clock: Clock, **_: Any) -> Fit:
    import jax
    from numpyro.infer import MCMC, NUTS

    begun = clock()
    mcmc = MCMC(NUTS(problem.model), num_warmup=NUTS_WARMUP, num_samples=NUTS_SAMPLES,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *problem.args)
    draws = jax.device_get(mcmc.get_samples())
    return Fit(draws, [], clock() - begun)


FITS: dict[str, Callable[..., Fit]] = {
    "advi_stan": lambda p, s, c, **o: _advi(p, s, c, **{"preset": "stan", **o}),
    "advi_robust": lambda p, s, c, **o: _advi(p, s, c, **{"preset": "robust", **o}),
    "advi_robust_fullrank": lambda p, s, c, **o: _advi(
        p, s, c, **{"preset": "robust", "family": "fullrank", **o}),
    "svi": _svi,
    "nuts": _nuts,
}


def run_one(target: str, method: str, seed: int, problem: suite_targets.Problem,
            clock: Clock = time.perf_counter, options: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """One fit of ``problem`` by ``method`` with ``seed``, scored: a row of the table
    (module docstring; ``seconds`` is the fit's wall time, compilation included where the
    process had not compiled it yet); ``options`` go to :func:`advi.fit` (ADVI methods)."""
    row: dict[str, Any] = {"target": target, "method": method, "seed": seed,
                           "dim": problem.dim, "warned": False, "raised": None, "notes": []}
    begun = clock()
    try:
        fit = FITS[method](problem, seed, clock, **(options or {}))
    except Exception as err:  # a fit that raises is a result of the suite, not its failure
        row.update(seconds=clock() - begun, raised=f"{type(err).__name__}: {str(err)[:200]}",
                   rms_z=math.nan, max_z=math.nan, log_sd=math.nan, nonfinite=False)
        return row
    row.update(seconds=fit.seconds, start=fit.start, khat=fit.khat, stop=fit.stop,
               rhat=fit.rhat)
    row.update(score(problem.quantities(fit.draws), problem.mean, problem.sd))
    row.update(warned=bool(fit.notes), notes=[n[:200] for n in fit.notes])
    return row


def worker(target: str, method: str, seeds: list[int], out: Path,
           settings: list[str] | None = None, jobs: int = 1) -> None:
    """Fit ``target`` by ``method`` for each seed in this process, appending each row to
    ``out`` (JSON lines) as it finishes; the first row's seconds are the cold start.
    ``settings`` (:mod:`suite_settings`) are applied first and recorded in each row, as
    are ``jobs`` (the fits the driver runs at a time) and ``cpus`` (those this process was
    pinned to where ``jobs`` > 1, a share of the usable CPUs: :func:`pinned`; else None)."""
    with pinned(jobs, out.parent) as cpus:
        options = suite_settings.apply(settings or [])
        problem = suite_targets.TARGETS[target].make()
        for index, seed in enumerate(seeds):
            row = run_one(target, method, seed, problem, options=options)
            row.update(cold=index == 0, settings=list(settings or []), jobs=jobs, cpus=cpus)
            _append(out, row)


def _append(out: Path, row: dict[str, Any]) -> None:
    """Appends ``row`` to ``out`` and prints its line of progress."""
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"{row['target']} / {row['method']} / seed {row['seed']}: rms_z {row['rms_z']:.3g}, "
          f"{row['seconds']:.1f} s{', warned' if row['warned'] else ''}"
          f"{', raised' if row['raised'] else ''}", flush=True)


@contextlib.contextmanager
def pinned(jobs: int, slots_dir: Path) -> Iterator[list[int] | None]:
    """With ``jobs`` > 1, this process pinned to ``usable CPUs // jobs`` of them (at least
    one) not held by the other workers, for the block (``advi_repro.runners.cpus``, its
    slot file under ``slots_dir``); yields their ids, or None where nothing is pinned
    (``jobs`` 1, or an OS without affinity calls). Call it before the first JAX
    computation: XLA sizes its thread pools from the affinity mask then."""
    if jobs <= 1 or not hasattr(os, "sched_getaffinity"):
        yield None
        return
    from advi_repro.runners.cpus import cpu_share

    cores = max(1, len(os.sched_getaffinity(0)) // jobs)
    with cpu_share(cores, slots_dir, environ={}) as share:
        yield None if share.cpu_ids is None else list(share.cpu_ids)


# ----------------------------------------------------------------------------------------
# The driver: one process per (target, method), resumable
# ----------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows written so far (none where the file does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plan(targets: list[str], methods: list[str], seeds: list[int], done: list[dict]
         ) -> list[tuple[str, str, list[int]]]:
    """The (target, method, seeds) jobs still to run: full-rank only where K <= 200 is
    decided in the worker's process (K is known once the target is built), so it is
    planned everywhere; seeds already in ``done`` are left out."""
    have = {(r["target"], r["method"], r["seed"]) for r in done}
    jobs = []
    for target in targets:
        for method in methods:
            todo = [s for s in seeds if (target, method, s) not in have]
            if todo:
                jobs.append((target, method, todo))
    return jobs


def launch(job: tuple[str, str, list[int]], out: Path, log_dir: Path,
           settings: list[str] | None = None, jobs: int = 1) -> int:
    """Runs one job in a new process with the persistent compilation cache off; ``jobs``
    (the jobs run at a time) is recorded in its rows."""
    target, method, seeds = job
    log = log_dir / f"{target.replace(' ', '_').replace('/', '_')}.{method}.log"
    command = [sys.executable, __file__, "--worker", target, method, "--out", str(out),
               "--seeds", *map(str, seeds), "--jobs", str(jobs), "--set", *(settings or [])]
    with log.open("a") as f:
        return subprocess.run(command, stdout=f, stderr=subprocess.STDOUT,
                              env={**os.environ, **COLD_ENV}, check=False).returncode


def check_settings(settings: list[str], methods: list[str], done: list[dict]) -> None:
    """Refuse settings that would be lost or mixed, before any fit.

    Raises:
        ValueError: settings with a method that is not ADVI's (they would be ignored), a
            malformed setting, or rows already in the output made with other settings.
    """
    for setting in settings:
        suite_settings.parse(setting)
    if settings and any(not m.startswith("advi") for m in methods):
        raise ValueError(f"--set {' '.join(settings)} applies to the ADVI methods only; "
                         f"drop {[m for m in methods if not m.startswith('advi')]} from "
                         "--methods")
    other = {tuple(r.get("settings", [])) for r in done} - {tuple(settings)}
    if other:
        raise ValueError(f"the rows already in --out were made with settings {sorted(other)}"
                         f", not {settings}: give another --out")


def main(argv: list[str] | None = None) -> None:
    """The command line of the module docstring."""
    args = _parser().parse_args(argv)
    if args.worker:
        target, method = args.worker
        if method == "advi_robust_fullrank":  # K known only once built: skip above 200
            if suite_targets.TARGETS[target].make().dim > FULLRANK_MAX_DIM:
                return
        worker(target, method, args.seeds, Path(args.out), args.set, args.jobs)
        return
    check_settings(args.set, args.methods, read_rows(Path(args.out) / "rows.jsonl"))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "logs").mkdir(exist_ok=True)
    rows_path = out_dir / "rows.jsonl"
    targets = args.targets or list(suite_targets.FAST if args.fast else suite_targets.TARGETS)
    jobs = plan(targets, args.methods, args.seeds, read_rows(rows_path))
    print(f"{len(jobs)} jobs ({args.jobs} at a time); rows in {rows_path}", flush=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = pool.map(lambda j: launch(j, rows_path, out_dir / "logs", args.set, args.jobs),
                        jobs)
        for job, code in zip(jobs, runs, strict=True):
            if code:
                print(f"{job[0]} / {job[1]}: the worker exited with {code} (see its log)")
    rows = [r for r in read_rows(rows_path) if r["target"] in targets]
    table = suite_table.markdown(rows, suite_targets.TARGETS)
    print(table)
    if args.write_docs:
        suite_table.write_docs(table, Path(__file__).resolve().parents[1])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", nargs="*", help="names of suite_targets.TARGETS")
    parser.add_argument("--fast", action="store_true", help="the targets that need no gym")
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=1, help="processes at a time")
    parser.add_argument("--out", default="results/suite", help="rows.jsonl and logs/")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the table into docs/library/generalisation.md")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="advi constants (module.NAME=VALUE) or advi.fit options "
                        "(option=VALUE) for the ADVI methods' fits: suite_settings.py")
    parser.add_argument("--worker", nargs=2, metavar=("TARGET", "METHOD"),
                        help=argparse.SUPPRESS)
    return parser


if __name__ == "__main__":
    main()
