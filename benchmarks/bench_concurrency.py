"""Do fits side by side keep their speed? E1's NUTS and E3's ADVI, alone and together.

    python benchmarks/bench_concurrency.py [--budget-s 60] [--out /tmp/bench_concurrency]

Runs ``scripts/fit.py`` at paper scale (the paper's data sizes), one core per fit as the
workflow runs them: first each fit alone, one after the other, then both at once in one
results folder, where each pins itself to its own CPU (``advi_repro.runners.cpus``). For each fit it
prints the clock seconds (``wall_s`` of trace.csv, compilation and scoring excluded) to the
last iteration both of its runs reached, and their ratio; the target is a ratio within
1.15. Needs 2 free CPUs: other work on the machine shows up as interference.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
FITS = {"E1 NUTS": ["experiment=linreg_ard", "method=nuts"],
        "E3 ADVI": ["experiment=gamma_poisson_nmf", "method=advi",
                    "method.tol_rel_obj=0.001", "method.max_iter=30000"]}
TARGET = 1.15


def start(overrides: list[str], results: Path, budget_s: float, log: Path, cores: int = 1
          ) -> subprocess.Popen:
    """``scripts/fit.py`` with ``overrides`` on ``cores`` CPUs into ``results``, its output
    into ``log``."""
    command = [sys.executable, str(REPO / "scripts" / "fit.py"), *overrides, "seed=0",
               f"cores={cores}", f"budget_s={budget_s}", f"results_dir={results}"]
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def trace_of(results: Path, overrides: list[str]) -> pd.DataFrame:
    """The trace.csv the fit of ``overrides`` wrote under ``results``."""
    experiment = overrides[0].split("=")[1]
    (path,) = (results / "runs" / "paper" / experiment).glob("*/seed0/trace.csv")
    return pd.read_csv(path)


def seconds_to_common_iteration(alone: pd.DataFrame, beside: pd.DataFrame
                                ) -> tuple[int, float, float]:
    """The last checkpoint iteration both traces reached, and each one's clock there."""
    common = sorted(set(alone["iteration"]) & set(beside["iteration"]))[-1]
    at = lambda trace: float(trace.loc[trace["iteration"] == common, "wall_s"].iloc[-1])  # noqa: E731
    return common, at(alone), at(beside)


def run_all(out: Path, budget_s: float) -> None:
    """Runs both fits alone, then together, and prints the comparison."""
    for name, overrides in FITS.items():
        t0 = time.perf_counter()
        folder = out / "alone" / name.replace(" ", "_")
        if start(overrides, folder, budget_s, out / f"alone_{name[:2]}.log").wait() != 0:
            raise SystemExit(f"{name} alone failed: see {out}")
        print(f"{name} alone: {time.perf_counter() - t0:.0f} s wall-clock", flush=True)
    t0 = time.perf_counter()
    procs = [start(o, out / "beside", budget_s, out / f"beside_{n[:2]}.log")
             for n, o in FITS.items()]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit(f"a fit beside another failed: see {out}")
    print(f"both beside each other: {time.perf_counter() - t0:.0f} s wall-clock")
    for name, overrides in FITS.items():
        alone = trace_of(out / "alone" / name.replace(" ", "_"), overrides)
        beside = trace_of(out / "beside", overrides)
        iteration, a, b = seconds_to_common_iteration(alone, beside)
        verdict = "PASS" if b / a <= TARGET else "MISS"
        print(f"{name}: to iteration {iteration}: alone {a:.2f} s, beside the other "
              f"{b:.2f} s, ratio {b / a:.3f} (target <= {TARGET}) {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_concurrency"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    run_all(args.out, args.budget_s)


if __name__ == "__main__":
    main()
