"""The workflow's plan and how long it should take, without running anything.

    python scripts/plan.py                         # the default run: every experiment
    python scripts/plan.py --cores 2 16 64 --seeds 0
    python scripts/plan.py --measure results       # clock seconds of a real run's runs

Prints every planned run with its cores, budget, estimate and worst case, then the hours
on each number of cores (planning/estimate.py). ``--measure`` prints, as the YAML of
``conf/estimates.yaml``, the clock and wall-clock seconds and budget of the paper-scale runs
under a results folder, to refresh the estimates from (planning/estimate.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from advi_repro.planning.estimate import estimate_runs, plan_table, read_estimates, summary_line
from advi_repro.planning.paths import checkout_conf
from advi_repro.planning.workflow import experiment_names, plan_workflow


def measured(results_dir: Path, skip: tuple[str, ...] = ()
             ) -> dict[str, dict[str, dict[str, dict[str, float | bool]]]]:
    """``{"paper": {experiment: {method: {wall_s, total_s, budget_s, checkpoint_s,
    budget_bound, next_transition_s}}}}`` (:class:`advi_repro.planning.estimate.Measured`) of the
    finished
    paper-scale runs under ``results_dir/runs/paper`` (the run of the median ``total_s``
    where several seeds ran), leaving out the methods named in ``skip`` (e.g. runs made
    with code that has changed since)."""
    runs: dict[str, dict[str, list[dict[str, float | bool]]]] = {}
    for path in sorted((results_dir / "runs" / "paper").glob("*/*/seed*/info.json")):
        info = json.loads(path.read_text())
        if (info.get("status") != "finished" or info.get("wall_s") is None
                or info["method"] in skip):
            continue
        record = {k: round(float(info[k]), 2)
                  for k in ("wall_s", "total_s", "budget_s", "checkpoint_s", "next_transition_s")
                  if info.get(k) is not None}
        if "stopped_by_budget" in info:
            record["budget_bound"] = bool(info["stopped_by_budget"])
        runs.setdefault(info["experiment"], {}).setdefault(info["method"], []).append(record)
    return {"paper": {e: {m: sorted(r, key=lambda x: x["total_s"])[(len(r) - 1) // 2]
                          for m, r in methods.items()} for e, methods in runs.items()}}


def main() -> None:
    """Parses the command line and prints the plan (or the measured seconds)."""
    conf = checkout_conf(__file__)  # this checkout's, as the Snakefile beside it reads
    default = yaml.safe_load((conf / "workflow.yaml").read_text())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, nargs="+", default=[2, 16, 64])
    parser.add_argument("--seeds", type=int, nargs="+", default=default["seeds"])
    parser.add_argument("--experiments", nargs="+",
                        default=default.get("experiments") or experiment_names(conf))
    parser.add_argument("--overrides", nargs="*", default=default["overrides"],
                        help="Hydra overrides for every run, as the workflow's config")
    parser.add_argument("--measure", type=Path, metavar="RESULTS_DIR")
    parser.add_argument("--skip", nargs="*", default=[], metavar="METHOD",
                        help="with --measure: method run names to leave out")
    args = parser.parse_args()
    if args.measure is not None:
        print(yaml.safe_dump(measured(args.measure, tuple(args.skip)), sort_keys=False),
              end="")
        return
    plan = plan_workflow(experiments=args.experiments, scale="paper", seeds=args.seeds,
                         overrides=args.overrides, conf_dir=conf)
    estimates = estimate_runs(plan.runs, read_estimates(conf / "estimates.yaml"))
    print(plan_table(estimates))
    print(summary_line(estimates, args.cores))


if __name__ == "__main__":
    main()
