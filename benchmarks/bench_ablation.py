"""Each tuned default of the robust preset with and without it, on the validation suite.

For each ablation named (default: all of :data:`ABLATIONS`), the robust preset's fits of the
suite (``bench_suite.py --methods advi_robust --set ...``) run again with that default
switched off, into ``<out>/<name>/rows.jsonl`` (resumable, as the suite is). The summary
line of each is then printed beside the baseline's, over the baseline's counted targets
(NUTS's rows come from the baseline, so NUTS is not run again), with the targets whose
result changed: median RMS z moved by more than :data:`MOVED` or across 1 sd, or a fit that
now warns, raises or is silently far off where it did not.

    python benchmarks/bench_suite.py --methods advi_robust nuts --out results/suite
    python benchmarks/bench_ablation.py --baseline results/suite --jobs 2
    python benchmarks/bench_ablation.py --baseline results/suite runaway laplace_starts

A default earns its place where removing it makes the suite worse (a silent or far-off fit,
a larger median, more false alarms, a slower cold fit) without costing the paper's claims
(``bench_peers.py``).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import bench_suite
import suite_table

ABLATIONS: dict[str, tuple[list[str], str]] = {
    "runaway": (["lbfgs.RUNAWAY=inf"],
                "the host L-BFGS never stops a stage for a runaway gradient"),
    # a finite count: the steps per dimension are rounded up to an integer
    "unwhitened_first": (["laplace.UNWHITENED_STEPS_PER_DIM=1e9"],
                         "the first stage is never whitened by the Hessian (|-H|)"),
    "one_stage": (["laplace.LAPLACE_STAGES=1"], "no whitened second stage"),
    "extra_stages": (["laplace.LAPLACE_EXTRA_STAGES=0"],
                     "no further whitened stage where the last met its test short of a mode"),
    "newton_test": (["laplace.MODE_SD_TOL=inf"],
                    "any start with -H positive definite is accepted (no Newton-step test)"),
    "no_hessian": (["laplace.HESSIAN_MAX_DIM=0"],
                   "the compiled search and one common scale at every K (no Hessian)"),
    "resolution": (["precision.RESOLUTION_SD=inf"],
                   "dtype='auto' never promotes a start float32 cannot resolve"),
    "fell_back_khat": (["checks.FELL_BACK_KHAT=inf"],
                       "no warning for a random start's k-hat"),
    "gradient_check": (["checks.GRAD_SHIFT=inf", "checks.SCALE_SHIFT=inf",
                        "checks.NARROW_FLOOR=0.0"],
                       "no end-of-fit warning from the ELBO's gradient in q's mean or "
                       "log sds"),
    "spread_note": (["spread.SD_INFLATION_MAX=inf"], "no note of a mean-field q's sds"),
    "settled_rhat": (["stationarity.SETTLED_RHAT_MAX=inf"],
                     "after an accepted start the ELBO's rule stops whatever split R-hat"),
    "anneal": (["anneal.ANNEAL_FACTOR=1"],
               "no continuation at eta / 10 where the gradient check flags a few coordinates"),
    "laplace_starts": (["laplace_starts=1"], "one L-BFGS start, not nine"),
    "precondition": (["precondition=False"], "mean steps not scaled by q's sd"),
    "adam_b2": (["optimizer='adam'"], "Adam's b2 = 0.999 (optax's default), not 0.99"),
}
"""Ablation name -> (settings of ``suite_settings``, what the setting removes)."""

MOVED = 0.1
"""A target's result changed where its median RMS z moved by more than this (sd)."""


def _robust_line(rows: list[dict[str, Any]]) -> str:
    """The robust preset's summary line of ``rows`` (with NUTS's rows for the counts)."""
    lines = [line for line in suite_table.summary(rows) if line.startswith("| advi_robust |")]
    return lines[0] if lines else "| advi_robust | 0 |" + " - |" * 9


def _target_state(rows: list[dict[str, Any]]) -> tuple[float, int, int, int]:
    values = [r["rms_z"] for r in rows]
    finite = [v for v in values if v == v]
    median = statistics.median(finite) if finite else float("nan")
    return (median, sum(bool(r["warned"]) for r in rows), sum(bool(r["raised"]) for r in rows),
            sum(suite_table.silent(r) for r in rows))


def changed_targets(base: list[dict[str, Any]], ablated: list[dict[str, Any]]) -> list[str]:
    """The targets whose robust result changed (module docstring), each as ``name: before
    -> after`` (median RMS z, then W/E/! counts where they differ)."""
    out = []
    for target in dict.fromkeys(r["target"] for r in ablated):
        before = _target_state([r for r in base if r["target"] == target])
        after = _target_state([r for r in ablated if r["target"] == target])
        moved = abs(after[0] - before[0]) > MOVED or (before[0] > 1) != (after[0] > 1)
        if moved or before[1:] != after[1:]:
            flags = "".join(f" {f}{b}->{a}" for f, b, a in zip("WE!", before[1:], after[1:],
                                                                 strict=True) if a != b)
            out.append(f"{target}: {before[0]:.2f} -> {after[0]:.2f}{flags}")
    return out


def compare(baseline: list[dict[str, Any]], runs: dict[str, list[dict[str, Any]]]
            ) -> str:
    """The markdown comparison: the baseline's robust summary line, then each ablation's
    over the same targets and NUTS rows, and below, the targets each ablation changed."""
    nuts = [r for r in baseline if r["method"] == "nuts"]
    base = [r for r in baseline if r["method"] == "advi_robust"]
    header = suite_table.summary(baseline)[:2]
    lines = ["| ablation | removes " + header[0].removeprefix("| method "),
             "| --- | --- " + header[1].removeprefix("| --- "),
             "| (none: the defaults) | - " + _robust_line(baseline).removeprefix("| advi_robust ")]
    notes = []
    for name, rows in runs.items():
        targets = {r["target"] for r in rows}
        mine = [r for r in base if r["target"] in targets]
        line = _robust_line(rows + [r for r in nuts if r["target"] in targets])
        lines.append(f"| {name} | {ABLATIONS[name][1]} " + line.removeprefix("| advi_robust "))
        changes = changed_targets(mine, rows)
        notes.append(f"- **{name}**: " + ("; ".join(changes) if changes else "no target changed"))
    return "\n".join(lines + ["", *notes])


def main(argv: list[str] | None = None) -> None:
    """The command line of the module docstring."""
    args = _parser().parse_args(argv)
    unknown = [n for n in args.ablations if n not in ABLATIONS]
    if unknown:
        raise SystemExit(f"unknown ablations {unknown}; known: {list(ABLATIONS)}")
    baseline = bench_suite.read_rows(Path(args.baseline) / "rows.jsonl")
    if not any(r["method"] == "advi_robust" for r in baseline):
        raise SystemExit(f"{args.baseline}/rows.jsonl has no advi_robust rows: run the suite "
                         "there first (bench_suite.py --methods advi_robust nuts)")
    targets = args.targets or list(dict.fromkeys(r["target"] for r in baseline))
    seeds = args.seeds or sorted({r["seed"] for r in baseline})
    runs = {}
    for name in args.ablations or list(ABLATIONS):
        out = Path(args.out) / name
        bench_suite.main(["--methods", "advi_robust", "--out", str(out), "--jobs",
                          str(args.jobs), "--seeds", *map(str, seeds), "--targets", *targets,
                          "--set", *ABLATIONS[name][0]])
        runs[name] = [r for r in bench_suite.read_rows(out / "rows.jsonl")
                      if r["target"] in targets]
    kept = [r for r in baseline if r["target"] in targets and r["seed"] in seeds]
    print(compare(kept, runs))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("ablations", nargs="*", help=f"names of ABLATIONS: {list(ABLATIONS)}")
    parser.add_argument("--baseline", default="results/suite",
                        help="the suite's output with advi_robust and nuts rows")
    parser.add_argument("--targets", nargs="*", help="default: the baseline's")
    parser.add_argument("--seeds", nargs="*", type=int, help="default: the baseline's")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="results/ablation")
    return parser


if __name__ == "__main__":
    main()
