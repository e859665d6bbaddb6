"""The workflow's plan and how long it should take, without running anything.

    python scripts/plan.py                         # the default run (conf/workflow.yaml)
    python scripts/plan.py --cores 2 16 64 --seeds 0
    python scripts/plan.py --measure results       # clock seconds of a real run's runs

Prints every planned run with its cores, budget, estimate and worst case, then the hours
on each number of cores (runners/estimate.py). ``--measure`` prints, as the YAML of
``conf/estimates.yaml``, the wall-clock seconds (``total_s``) that the paper-scale runs
under a results folder took (the median over seeds), to refresh the estimates from; runs
that used their whole budget are left out (a longer budget would let them run longer).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import yaml

from runners.estimate import estimate_runs, plan_table, read_estimates, summary_line
from runners.paths import REPO_ROOT
from runners.workflow import plan_workflow

BUDGET_USED = 0.95
"""A run whose clock reached this fraction of its budget counts as budget-bound."""


def measured(results_dir: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{"paper": {experiment: {method: median total_s}}}`` of the finished paper-scale runs
    under ``results_dir/runs/paper`` that ended before their budget."""
    seconds: dict[str, dict[str, list[float]]] = {}
    for path in sorted((results_dir / "runs" / "paper").glob("*/*/seed*/info.json")):
        info = json.loads(path.read_text())
        if info.get("status") != "finished" or info.get("wall_s") is None:
            continue
        if info["wall_s"] < BUDGET_USED * info["budget_s"]:
            by_method = seconds.setdefault(info["experiment"], {})
            by_method.setdefault(info["method"], []).append(float(info["total_s"]))
    return {"paper": {e: {m: round(statistics.median(s), 2) for m, s in methods.items()}
                      for e, methods in seconds.items()}}


def main() -> None:
    """Parses the command line and prints the plan (or the measured seconds)."""
    default = yaml.safe_load((REPO_ROOT / "conf" / "workflow.yaml").read_text())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, nargs="+", default=[2, 16, 64])
    parser.add_argument("--seeds", type=int, nargs="+", default=default["seeds"])
    parser.add_argument("--experiments", nargs="+", default=default["experiments"])
    parser.add_argument("--overrides", nargs="*", default=default["overrides"],
                        help="Hydra overrides for every run, as the workflow's config")
    parser.add_argument("--measure", type=Path, metavar="RESULTS_DIR")
    args = parser.parse_args()
    if args.measure is not None:
        print(yaml.safe_dump(measured(args.measure), sort_keys=False), end="")
        return
    plan = plan_workflow(experiments=args.experiments, scale="paper", seeds=args.seeds,
                         overrides=args.overrides)
    estimates = estimate_runs(plan.runs, read_estimates())
    print(plan_table(estimates))
    print(summary_line(estimates, args.cores))


if __name__ == "__main__":
    main()
