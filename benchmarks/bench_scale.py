"""ADVI on unstandardised data: how far each preset ends from the exact posterior, and
whether it says so.

The model is a normal mean with a flat-ish prior, ``mu ~ Normal(0, 1e9)``, and ``N``
observations ``y ~ Normal(mu, 1)`` drawn around a value s; the exact posterior is normal with
mean ``sum(y) / (N + 1e-18)`` and sd ``1 / sqrt(N + 1e-18)`` (computed in float64). For each
s and preset the table gives the returned mean of q, its distance from the exact mean in
posterior sds, the stopping reason, the dtype the fit ran in (the robust preset's
``dtype="auto"`` refits in float64 where float32 cannot resolve q, :mod:`advi.precision`),
k-hat, whether the fit warned (:mod:`advi.checks`), and its seconds (compilation included).
A fit is "silent and wrong" when it is more than 1 sd off without a warning: the script
exits with status 1 if any is, or if robust is more than ``--tol-sd`` off anywhere.

    python benchmarks/bench_scale.py                  # s = 1, 1e2, ..., 1e8; both presets
    python benchmarks/bench_scale.py --seeds 0 1 2 --presets robust
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from typing import Any

import numpy as np

PRIOR_SD = 1e9
NUM_OBS = 100
SCALES = (1.0, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8)


def model(y: Any) -> None:
    """mu ~ Normal(0, PRIOR_SD); y_n ~ Normal(mu, 1)."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, PRIOR_SD))
    with numpyro.plate("data", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def exact(y: np.ndarray) -> tuple[float, float]:
    """The exact posterior mean and sd of mu (float64)."""
    precision = y.size + PRIOR_SD**-2
    return float(np.sum(y) / precision), float(precision**-0.5)


def one_fit(scale: float, preset: str, seed: int) -> dict[str, Any]:
    """One fit of the normal mean around ``scale``: its row of the table."""
    import jax

    import advi

    y = scale + np.random.default_rng(seed).normal(size=NUM_OBS)
    mean, sd = exact(y)
    begun = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = advi.fit(model, y, rng_key=jax.random.PRNGKey(seed), preset=preset)
    seconds = time.perf_counter() - begun
    got = float(np.asarray(result.params.mu, np.float64)[0])
    return dict(s=scale, preset=preset, seed=seed, mean=got, sds_off=abs(got - mean) / sd,
                reason=result.convergence_reason, dtype=str(result.params.mu.dtype),
                khat=result.pareto_khat, warned=any("remedy:" in w for w in result.warnings),
                seconds=seconds)


def silent_miss(row: dict[str, Any]) -> bool:
    """More than 1 posterior sd off without an end-of-fit warning."""
    return not (row["sds_off"] <= 1.0 or row["warned"])


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| s | preset | seed | returned mean | sds off | stop | dtype | k-hat | warns | s |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- | ---: | --- | ---: |")
    for r in rows:
        khat = "n/a" if r["khat"] is None else f"{r['khat']:.2f}"
        print(f"| {r['s']:g} | {r['preset']} | {r['seed']} | {r['mean']:.10g} | "
              f"{r['sds_off']:.3g} | {r['reason']} | {r['dtype']} | {khat} | "
              f"{'yes' if r['warned'] else 'no'} | {r['seconds']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=float, nargs="+", default=list(SCALES))
    parser.add_argument("--presets", nargs="+", default=["stan", "robust"],
                        choices=["stan", "robust"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--tol-sd", type=float, default=0.1,
                        help="robust must end within this many posterior sds (default 0.1)")
    args = parser.parse_args(argv)
    rows = [one_fit(s, p, seed) for s in args.scales for p in args.presets
            for seed in args.seeds]
    print_table(rows)
    misses = [r for r in rows if silent_miss(r)]
    far = [r for r in rows if r["preset"] == "robust" and not r["sds_off"] <= args.tol_sd]
    worst = max((r["sds_off"] for r in rows if r["preset"] == "robust"), default=math.nan)
    print(f"\nsilent misses (> 1 sd off, no warning): {len(misses)}; robust worst "
          f"{worst:.3g} sd (target <= {args.tol_sd:g}), {len(far)} fit(s) beyond it")
    return 1 if misses or far else 0


if __name__ == "__main__":
    raise SystemExit(main())
