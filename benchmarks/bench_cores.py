"""How many cores should a fit take? Paper-scale fits on 1 core and on 2, to the same
iteration.

    python benchmarks/bench_cores.py [--budget-s 60] [--fits E1_NUTS E6_B1000 ...]

Runs ``scripts/fit.py`` at paper scale (the paper's data sizes) for each fit, first with
``cores=1`` and then ``cores=2`` (each alone on the machine, pinned by ``advi_repro.runners.cpus``;
XLA and Eigen then use that many threads), and prints the clock seconds (``wall_s`` of
trace.csv: compilation and scoring excluded) to the last checkpoint both runs reached,
their ratio, and the fewest cores within ``TOLERANCE`` of the faster: the default that
``cores`` in the config should take for that run (``snakemake --cores N`` runs N / cores
fits side by side). Needs 2 free CPUs; other work on the machine shows up in the seconds.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench_concurrency import seconds_to_common_iteration, start, trace_of

ADVI_NMF = ["method=advi", "method.tol_rel_obj=0.001", "method.max_iter=30000",
            "method.checkpoint_every=500"]
FITS = {"E1_NUTS": ["experiment=linreg_ard", "method=nuts"],
        "E1_ADVI": ["experiment=linreg_ard", "method=advi"],
        "E3_ADVI": ["experiment=gamma_poisson_nmf", *ADVI_NMF],
        "E3_NUTS": ["experiment=gamma_poisson_nmf", "method=nuts"],
        "E5_NUTS": ["experiment=gmm", "method=nuts"],
        "E6_B500": ["experiment=gmm_minibatch", "method=advi", "method.minibatch_size=500",
                    "method.eval_draws=100", "method.checkpoint_every=500"],
        "E6_B1000": ["experiment=gmm_minibatch", "method=advi", "method.minibatch_size=1000",
                     "method.eval_draws=100", "method.checkpoint_every=500"]}
"""The fits timed, as the experiments' method lists run them (conf/experiment/)."""
TOLERANCE = 1.10
"""A fit takes the fewest cores whose seconds are within this factor of its fastest."""


def time_fit(name: str, out: Path, budget_s: float, cores: int) -> Path:
    """Runs fit ``name`` on ``cores`` CPUs into ``out/<name>/cores<cores>`` and returns
    that results folder; simulated or fetched data is shared between the core counts."""
    results = out / name / f"cores{cores}"
    results.mkdir(parents=True, exist_ok=True)
    shared = out / name / "data"
    shared.mkdir(exist_ok=True)
    if not (results / "data").exists():
        (results / "data").symlink_to(shared, target_is_directory=True)
    t0 = time.perf_counter()
    if start(FITS[name], results, budget_s, out / f"{name}_cores{cores}.log",
             cores=cores).wait() != 0:
        raise SystemExit(f"{name} on {cores} cores failed: see {out}")
    print(f"{name} on {cores} core(s): {time.perf_counter() - t0:.0f} s wall-clock",
          flush=True)
    return results


def compare(name: str, one: Path, two: Path) -> None:
    """Prints the clock seconds of both runs of ``name`` to their common iteration, or,
    where their checkpoints share no iteration (a budget cut both chunks at different
    points), their seconds per iteration at their last checkpoints."""
    a_trace, b_trace = trace_of(one, FITS[name]), trace_of(two, FITS[name])
    if set(a_trace["iteration"]) & set(b_trace["iteration"]):
        iteration, a, b = seconds_to_common_iteration(a_trace, b_trace)
        where = f"to iteration {iteration}"
    else:
        last = [t.iloc[-1] for t in (a_trace, b_trace)]
        a, b = (float(row["wall_s"]) / float(row["iteration"]) for row in last)
        where = (f"per iteration (to iterations {int(last[0]['iteration'])} and "
                 f"{int(last[1]['iteration'])})")
    pick = 1 if a <= TOLERANCE * min(a, b) else 2
    print(f"{name}: {where}: 1 core {a:.4g} s, 2 cores {b:.4g} s, 2 cores / 1 core "
          f"{b / a:.3f}; cores: {pick}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--fits", nargs="+", choices=sorted(FITS), default=list(FITS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_cores"))
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("bench_cores needs 2 CPUs this process may use")
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    for name in args.fits:
        one = time_fit(name, args.out, args.budget_s, 1)
        two = time_fit(name, args.out, args.budget_s, 2)
        compare(name, one, two)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
