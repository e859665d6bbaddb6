"""Where one ``advi.fit`` of E1 spends its time: a timeline of a fresh process.

For one fit plus 1,000 draws (as ``bench_advi.py`` (b) times them) it prints:

- per function JAX traced, lowered and compiled: the seconds of each stage, and when its
  XLA compilation ended (seconds from the call of ``advi.fit``); a compilation's seconds
  are wall time in its own thread, so they include waiting for a core;
- the fit's milestones from the ``advi`` logger (compiled, the start, the first and last
  progress lines);
- the cores kept busy (process CPU-seconds per wall second) in 0.25-s windows, and the
  CPU-seconds of the whole fit: on a machine with C cores no schedule finishes the fit in
  less than CPU-seconds / C.

    python benchmarks/profile_fit.py                  # robust, a new empty cache ("cold")
    python benchmarks/profile_fit.py --cache warm     # a first process fills the cache
    python benchmarks/profile_fit.py --preset stan --cache off

The cache is JAX's persistent compilation cache as ``advi.fit`` turns it on
(``XDG_CACHE_HOME`` of the child process; ``ADVI_COMPILATION_CACHE=0`` for "off").
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import bench_common as common

SAMPLE_EVERY_S = 0.05
"""Seconds between two readings of the process's CPU time."""

WINDOW_SAMPLES = 5
"""Readings per utilisation window (0.25 s)."""

STAGES = {
    "trace": re.compile(r"Finished tracing (\S+) for jit in ([\d.e-]+) sec"),
    "lower": re.compile(
        r"Finished jaxpr to MLIR module conversion jit\((\S+?)\) in ([\d.e-]+) sec"),
    "compile": re.compile(r"Finished XLA compilation of jit\((\S+?)\) in ([\d.e-]+) sec"),
}
"""JAX's log lines (``jax.log_compiles``) for each stage: (function name, seconds)."""


class Recorder(logging.Handler):
    """Keeps ``(time.perf_counter(), thread name, message)`` of every record it sees."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[tuple[float, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append((time.perf_counter(), record.threadName, record.getMessage()))


def cpu_sampler(samples: list[tuple[float, float]]) -> threading.Thread:
    """A daemon thread appending ``(perf_counter, process_time)`` every
    :data:`SAMPLE_EVERY_S` seconds."""

    def run() -> None:
        while True:
            samples.append((time.perf_counter(), time.process_time()))
            time.sleep(SAMPLE_EVERY_S)

    thread = threading.Thread(target=run, daemon=True, name="cpu-sampler")
    thread.start()
    return thread


def stages(events: list[tuple[float, str, str]], begun: float) -> dict[str, dict[str, Any]]:
    """Per function name: the seconds of each of :data:`STAGES` (summed over its log lines)
    and ``"ended"``, when its last compilation ended (seconds after ``begun``)."""
    table: dict[str, dict[str, Any]] = defaultdict(lambda: {"ended": None})
    for at, _, message in events:
        for stage, pattern in STAGES.items():
            match = pattern.search(message)
            if match and at >= begun:
                row = table[match.group(1)]
                row[stage] = row.get(stage, 0.0) + float(match.group(2))
                if stage == "compile":
                    row["ended"] = at - begun
    return dict(table)


def milestones(events: list[tuple[float, str, str]], begun: float) -> list[tuple[float, str]]:
    """The ``advi`` logger's lines after ``begun``, progress lines ("iter ...") reduced to
    the first and the last."""
    lines = [(at - begun, text) for at, thread, text in events
             if at >= begun and not any(p.search(text) for p in STAGES.values())
             and not text.startswith(("Compiling", "Finished", "Persistent", "Not writing"))]
    progress = [i for i, (_, text) in enumerate(lines) if text.lstrip().startswith("iter")]
    drop = set(progress[1:-1])
    return [line for i, line in enumerate(lines) if i not in drop]


def utilisation(samples: list[tuple[float, float]], begun: float, ended: float
                ) -> list[tuple[float, float]]:
    """``(window start, cores busy)`` over the windows of :data:`WINDOW_SAMPLES` readings
    between ``begun`` and ``ended``."""
    inside = [s for s in samples if begun - SAMPLE_EVERY_S <= s[0] <= ended + SAMPLE_EVERY_S]
    edges = inside[::WINDOW_SAMPLES]
    return [(a - begun, (cb - ca) / (b - a))
            for (a, ca), (b, cb) in zip(edges, edges[1:], strict=False) if b > a]


def child(args: argparse.Namespace) -> None:
    """Profile one fit in this process and print the report."""
    samples: list[tuple[float, float]] = []
    cpu_sampler(samples)
    import jax

    import advi

    recorder = Recorder()
    for name in ("jax", "advi"):
        logging.getLogger(name).addHandler(recorder)
    logging.getLogger("advi").setLevel(logging.INFO)
    model, train, heldout = common.e1_problem(args.seed, args.num_train, args.num_features)
    jax.block_until_ready((train, heldout))
    # for every thread (``jax.log_compiles()`` is thread-local; advi.fit compiles in its own)
    jax.config.update("jax_log_compiles", True)
    begun, cpu = time.perf_counter(), time.process_time()
    result = advi.fit(model, *train, rng_key=jax.random.PRNGKey(args.seed), preset=args.preset)
    fitted, cpu_fit = time.perf_counter(), time.process_time() - cpu
    draws = jax.block_until_ready(result.sample(jax.random.PRNGKey(1), 1000))
    ended = time.perf_counter()
    report(args, result, recorder.events, samples, (begun, fitted, ended), cpu_fit)
    print(f"  held-out lpd {common.heldout_lpd(draws, *heldout):.4f} (NUTS -1.423)")


def report(args: argparse.Namespace, result: Any, events: list, samples: list,
           times: tuple[float, float, float], cpu_fit: float) -> None:
    """Print the profile of one fit (module docstring)."""
    begun, fitted, ended = times
    cores = os.cpu_count()
    print(f"E1 (N = {args.num_train}, D = {args.num_features}), preset {args.preset!r}, "
          f"cache {args.cache}; {cores} cores; load {common.format_load()}")
    print(f"  fit {fitted - begun:.2f} s (compile_s {result.compile_s:.2f}, wall_s "
          f"{result.wall_s:.2f}; {result.num_iterations} iterations, "
          f"{result.convergence_reason}, start {result.start}); 1,000 draws "
          f"{ended - fitted:.2f} s")
    print(f"  CPU-seconds of the fit {cpu_fit:.2f}: at least {cpu_fit / cores:.2f} s on "
          f"{cores} cores")
    print(f"  {'function':28s}{'trace s':>9s}{'lower s':>9s}{'compile s':>11s}{'ended at s':>12s}")
    for name, row in stages(events, begun).items():
        cells = "".join(f"{row.get(stage, float('nan')):{width}.3f}"
                        for stage, width in (("trace", 9), ("lower", 9), ("compile", 11)))
        ended_at = "" if row["ended"] is None else f"{row['ended']:12.2f}"
        print(f"  {name[:28]:28s}{cells}{ended_at}")
    print("  the fit's log (seconds from the call):")
    for at, text in milestones(events, begun):
        print(f"  {at:7.2f}  {text.strip()}")
    print("  cores busy, 0.25-s windows (start s: cores):")
    windows = utilisation(samples, begun, ended)
    print("  " + " ".join(f"{at:.2f}:{busy:.2f}" for at, busy in windows))


def run_child(args: argparse.Namespace, env: dict[str, str], quiet: bool = False) -> None:
    """This script with ``--child`` in a fresh interpreter under ``env``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--preset",
               args.preset, "--cache", args.cache, "--seed", str(args.seed),
               "--num-train", str(args.num_train), "--num-features", str(args.num_features)]
    proc = subprocess.run(command, env=env, capture_output=quiet, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the profiled process failed ({proc.returncode})"
                         + (f":\n{proc.stderr[-3000:]}" if quiet else ""))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=("robust", "stan"), default="robust")
    parser.add_argument("--cache", choices=("cold", "warm", "off"), default="cold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-train", type=int, default=10_000)
    parser.add_argument("--num-features", type=int, default=250)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.child:
        child(args)
        return
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", "ADVI_COMPILATION_CACHE")}
    with tempfile.TemporaryDirectory(prefix="profile-fit-cache-") as cache_home:
        env["XDG_CACHE_HOME"] = cache_home
        if args.cache == "off":
            env["ADVI_COMPILATION_CACHE"] = "0"
        if args.cache == "warm":
            run_child(args, env, quiet=True)
        run_child(args, env)


if __name__ == "__main__":
    main()
