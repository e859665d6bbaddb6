"""Stochastic ADVI on data streamed from disk (``advi.stream``): memory and throughput.

The Gaussian mixture of Figure 1b (``advi_repro.models.gmm``, K = 30, D = 576) on the
simulated imageCLEF stand-in, fitted from a memory-mapped float32 ``.npy`` of 2.5M training
rows (10x the paper's 250,000; 5.8 GB), its first N rows for N in 250k, 1M and 2.5M, with
minibatches of B rows. Each fit runs in a fresh process (its peak resident memory is its
own, and compiles: the persistent compilation cache is off): Stan's loop at a fixed eta,
``--iters`` iterations with the 100-draw ELBO every 100.
Printed per fit: the peak RSS of the process and how much of it came after the data were
opened (``beyond``: the fit's pools, parameters, compiled code), rows per second (B times
iterations over the fit's seconds, compilation excluded) and milliseconds per iteration,
with each row of a pool drawn on its own (``block_rows`` 1, the default) and in runs of 16
consecutive rows (``advi.stream(..., block_rows=16)``).
Targets: ``beyond`` flat in N (within 20% of the 250k fit's), and at 250k
streaming no slower than 1.3x the in-memory fit's seconds per iteration (the in-memory fit
copies the 250k rows to the device first; median of ``--repeats`` interleaved pairs).

    python benchmarks/bench_stream.py                # about 4 minutes on 2 CPU cores
    python benchmarks/bench_stream.py --quick        # 300 iterations, one pair

The data file is simulated once (about a minute), the first time, at ``--data``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_common as common

K, NUM_HELDOUT = 30, 10_000
SIZES = (250_000, 1_000_000, 2_500_000)
TARGET_FLAT, TARGET_RATIO = 1.2, 1.3
DEFAULT_DATA = common.ROOT / "results" / "data" / "bench" / "gmm_standin_2p5M_seed0.npy"


def peak_rss_gib() -> float:
    """The process's peak resident set size so far, GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child(path: Path, num_rows: int, mode: str, batch: int, iters: int) -> dict:
    """One fit in this process: streamed from ``path`` ("stream", or "stream16": in runs
    of 16 rows) or copied into memory first ("memory")."""
    import jax
    import numpy as np

    import advi
    from advi_repro.models import gmm

    rows = np.load(path, mmap_mode="r")[:num_rows]
    opened = peak_rss_gib()
    x = (np.array(rows) if mode == "memory"
         else advi.stream(rows, block_rows=16 if mode == "stream16" else 1))
    result = advi.fit(gmm.model, rng_key=jax.random.PRNGKey(0), minibatch_size=batch, eta=0.1,
                      max_iter=iters, tol_rel_obj=1e-12, progress_bar=False,
                      model_kwargs={"x": x, "K": K})
    return {"mode": mode, "n": num_rows, "peak": peak_rss_gib(), "opened": opened,
            "iters": result.num_iterations, "wall_s": result.wall_s,
            "compile_s": result.compile_s, "elbo": float(result.elbo_history.elbo[-1])}


def run_child(args: argparse.Namespace, num_rows: int, mode: str) -> dict:
    """:func:`child` in a fresh interpreter; its JSON report."""
    command = [sys.executable, "-W", "ignore", __file__, "--child", mode, str(num_rows),
               "--data", str(args.data), "--batch", str(args.batch), "--iters", str(args.iters)]
    # every fit compiles (JAX's persistent cache off): a cache hit skips compilation's
    # memory, which made the peak of equal fits differ by 0.2 GiB
    env = dict(os.environ, ADVI_COMPILATION_CACHE="0")
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def describe(r: dict, batch: int) -> str:
    """One printed row of a fit's report."""
    beyond = r["peak"] - r["opened"]
    return (f"    {r['mode']:>8} {r['n']:>10,} {r['peak']:>9.2f} {beyond:>9.2f} "
            f"{batch * r['iters'] / r['wall_s']:>11,.0f} {1e3 * r['wall_s'] / r['iters']:>9.2f}")


def ensure_data(path: Path) -> None:
    """Simulate the 2.5M-row stand-in at ``path`` unless it is there."""
    if path.exists():
        return
    from advi_repro.planning.datasets import simulate

    print(f"simulating the 2.5M-row stand-in at {path} (once, about a minute) ...", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    simulate.gmm_standin(0, num_train=SIZES[-1], num_heldout=NUM_HELDOUT, out_path=path)


def main() -> None:
    """Run the benchmark and print its report (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"the 2.5M-row stand-in .npy (simulated if missing; {DEFAULT_DATA})")
    parser.add_argument("--batch", type=int, default=500, help="B, rows per minibatch")
    parser.add_argument("--iters", type=int, default=1000, help="iterations per fit")
    parser.add_argument("--repeats", type=int, default=3, help="stream/memory pairs at 250k")
    parser.add_argument("--quick", action="store_true", help="300 iterations, one pair")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.data, int(args.child[1]), args.child[0], args.batch,
                               args.iters)))
        return
    if args.quick:
        args.iters, args.repeats = 300, 1
    start = time.perf_counter()
    ensure_data(args.data)
    print(f"Streamed stochastic ADVI: Gaussian mixture K = {K}, D = 576, B = {args.batch}, "
          f"{args.iters} iterations at eta 0.1 ({args.data})")
    common.print_environment()
    print(f"    {'mode':>8} {'N':>10} {'peak GiB':>9} {'beyond':>9} {'rows/s':>11} {'ms/iter':>9}")
    pairs = []
    for _ in range(args.repeats):  # interleaved, so that load from elsewhere hits both
        pairs.append((run_child(args, SIZES[0], "stream"), run_child(args, SIZES[0], "memory")))
        for r in pairs[-1]:
            print(describe(r, args.batch), flush=True)
    streamed = [pairs[-1][0]]
    for n in SIZES[1:]:
        streamed.append(run_child(args, n, "stream"))
        print(describe(streamed[-1], args.batch), flush=True)
    for n in SIZES:
        print(describe(run_child(args, n, "stream16"), args.batch), flush=True)
    beyond = [r["peak"] - r["opened"] for r in streamed]
    spread = max(beyond) / min(beyond)
    ratio = statistics.median(s["wall_s"] / s["iters"] / (m["wall_s"] / m["iters"])
                              for s, m in pairs)
    print(f"  memory beyond the opened data, largest / smallest over N: {spread:.2f}  "
          f"[{common.verdict(spread <= TARGET_FLAT)}: <= {TARGET_FLAT}]")
    print(f"  seconds per iteration at 250k, streamed / in memory (median of {len(pairs)}): "
          f"{ratio:.2f}  [{common.verdict(ratio <= TARGET_RATIO)}: <= {TARGET_RATIO}]")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
