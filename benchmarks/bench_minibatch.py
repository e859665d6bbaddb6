"""Speed and memory of stochastic ADVI on the E6 mixture, against its performance targets.

The Gaussian mixture of Figure 1b (``advi_repro.models.gmm``, K = 30, D = 576) on the simulated
imageCLEF stand-in (250,000 training rows, ``advi_repro.planning.datasets.simulate.gmm_standin``),
minibatch
size B in (50, 100, 500, 1000). Measures, in one process (see benchmarks/README.md):

(d) per minibatch size B: ADVI seconds per iteration (the algorithm step with Stan's step-size
    sequence, M = 1, n steps in one compiled loop) / seconds of one jitted gradient call of
    the minibatch log joint at B; target <= 1.3. Also printed: the gradient inside a compiled
    loop (no dispatch cost) and ``advi.fit``'s main loop with Stan's 100-draw ELBO every 100
    iterations, for information. The timers are ``bench_advi.py``'s (public API only).
(e) ``advi.fit`` at B = 500 with Stan's defaults, to convergence: optimisation seconds
    (target < 120 s on 2 CPU cores; the paper: about two hours on their machine) and the
    process's peak resident memory beyond the training data (target < 4 GiB).

    python benchmarks/bench_minibatch.py            # about 2 minutes on 2 CPU cores
    python benchmarks/bench_minibatch.py --quick    # fewer iterations and repeats

The data file (600 MB) is simulated once, the first time, at ``--data``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

# The sibling benchmark's timers, and the shared helpers (importing them puts this
# checkout's models/ and advi_repro.planning.datasets/ on sys.path).
import bench_advi
import bench_common as common

TARGET_RATIO = 1.3
TARGET_FIT_S = 120.0
TARGET_EXTRA_GIB = 4.0
NUM_TRAIN, NUM_HELDOUT, K = 250_000, 10_000, 30
EVAL_ELBO = 100
DEFAULT_DATA = common.ROOT / "results" / "data" / "bench" / "gmm_standin_seed0.npy"


def peak_rss_gib() -> float:
    """The process's peak resident set size so far, GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def load(path: Path) -> dict:
    """The training rows as ``{"x": (250,000, 576) float32}``, simulating the file first if
    it is missing."""
    from advi_repro.models import gmm
    from advi_repro.planning.datasets import simulate

    if not path.exists():
        print(f"simulating the stand-in data at {path} (once) ...", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        simulate.gmm_standin(0, num_train=NUM_TRAIN, num_heldout=NUM_HELDOUT, out_path=path)
    return gmm.load(path, seed=0, n_train=NUM_TRAIN, n_heldout=NUM_HELDOUT).train


def fit_to_convergence(train: dict, B: int) -> None:
    """(e): advi.fit with Stan's defaults at minibatch size B, and the peak memory."""
    import jax

    import advi
    from advi_repro.models import gmm

    data_gib = train["x"].nbytes / 2**30
    result = advi.fit(gmm.model, rng_key=jax.random.PRNGKey(0), minibatch_size=B,
                      model_kwargs=dict(train, K=K))
    extra = peak_rss_gib() - data_gib
    print(f"(e) advi.fit at B = {B}, Stan's defaults: {result.num_iterations} iterations, "
          f"{result.convergence_reason}, eta {result.eta:g}")
    print(f"    optimisation {result.wall_s:.1f} s (eta search {result.adapt_s:.1f} s), "
          f"compilation {result.compile_s:.1f} s  "
          f"[{common.verdict(result.wall_s < TARGET_FIT_S)}: < {TARGET_FIT_S:g} s]")
    print(f"    peak RSS {peak_rss_gib():.2f} GiB, of which data {data_gib:.2f} GiB: "
          f"{extra:.2f} GiB beyond it  "
          f"[{common.verdict(extra < TARGET_EXTRA_GIB)}: < {TARGET_EXTRA_GIB:g} GiB]")
    print()


def time_minibatches(train: dict, sizes: list[int], iters: int, repeats: int) -> None:
    """(d): per-iteration cost against one gradient at each B, medians of ``repeats``."""
    import advi
    from advi_repro.models import gmm

    data = dict(train, K=K)
    print(f"(d) median ms per iteration over {repeats} repeats of {iters} iterations (M = 1)")
    print(f"    {'B':>5} {'grad call':>10} {'grad loop':>10} {'step':>8} {'+ELBO':>8} "
          f"{'step/grad':>11} {'+ELBO/grad':>11}")
    for B in sizes:
        target = advi.from_numpyro(gmm.model, (), data, minibatch_size=B)
        stats: dict = {}
        timers = {
            "grad": bench_advi.grad_call_timer(target, 1),
            "loop": bench_advi.grad_loop_timer(target, 1),
            "step": bench_advi.step_timer(target, 1, "stan", stats),
            "elbo": bench_advi.fit_loop_timer(gmm.model, (), 1, eval_elbo=EVAL_ELBO,
                                              minibatch_size=B, model_kwargs=data),
        }
        ms = bench_advi.measure(timers, iters, repeats)
        med = {name: 1e3 * statistics.median(values) for name, values in ms.items()}
        ratio = med["step"] / med["grad"]
        print(f"    {B:>5} {med['grad']:>10.3f} {med['loop']:>10.3f} {med['step']:>8.3f} "
              f"{med['elbo']:>8.3f} {ratio:>11.2f} {med['elbo'] / med['grad']:>11.2f}  "
              f"[{common.verdict(ratio <= TARGET_RATIO)}: <= {TARGET_RATIO}]  "
              f"redraws/step {stats['redraws']:.2f}", flush=True)
    print()


def main() -> None:
    """Run the benchmark and print its report (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"the stand-in .npy (simulated if missing; default {DEFAULT_DATA})")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 500, 1000])
    parser.add_argument("--fit-size", type=int, default=500, help="B of (e)")
    parser.add_argument("--quick", action="store_true", help="100 iterations x 2 repeats")
    parser.add_argument("--iters", type=int, default=None,
                        help=f"iterations per timing, a multiple of {EVAL_ELBO} (300)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (3)")
    args = parser.parse_args()
    iters = args.iters or (100 if args.quick else 300)
    repeats = args.repeats or (2 if args.quick else 3)
    if iters % EVAL_ELBO:
        parser.error(f"--iters must be a multiple of {EVAL_ELBO}, got {iters}")
    if min(args.sizes + [args.fit_size]) < 1:
        parser.error(f"minibatch sizes must be >= 1, got {args.sizes} and {args.fit_size}")

    start = time.perf_counter()
    train = load(args.data)
    print(f"Stochastic ADVI benchmark: Gaussian mixture K = {K}, N = {NUM_TRAIN:,}, "
          f"D = {train['x'].shape[1]} (simulated stand-in, {args.data})")
    common.print_environment()
    print()
    fit_to_convergence(train, args.fit_size)  # first, so its peak memory is its own
    time_minibatches(train, args.sizes, iters, repeats)
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
