"""Publishes a finished workflow run as a Markdown page: its figures, claims and summaries,
with where, when and how it ran, all read from the run's own files.

    python scripts/publish_results.py results --out docs/results \\
        --command "snakemake --cores 2 --config 'seeds=[0]' 'overrides=[\\"budget_s=600\\"]'"

Writes ``<out>/index.md``, ``<out>/figures/*.png`` (the accuracy and factor figures,
shrunk to at most 1,000 pixels wide), ``<out>/claims.csv`` and ``<out>/summaries/*.csv``.
Nothing on the page is typed by hand: the provenance (commit, machine, cores, dates, hours)
comes from the runs' ``info.json`` and the files' times, the tables from ``claims.csv`` and
the summaries.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from PIL import Image

from advi_repro.analysis.runinfo import describe_resources
from advi_repro.planning.paths import checkout_conf

MAX_WIDTH = 1000
"""Published figures are shrunk to at most this many pixels wide."""


def read_infos(results: Path) -> list[dict[str, Any]]:
    """The ``info.json`` of every finished or stopped run under ``results/runs``.

    Raises:
        FileNotFoundError: there are none.
    """
    paths = sorted((results / "runs").glob("*/*/*/seed*/info.json"))
    if not paths:
        raise FileNotFoundError(f"no runs under {results / 'runs'}: run the workflow first")
    infos = []
    for path in paths:
        info = json.loads(path.read_text())
        info["_finished_at"] = path.stat().st_mtime
        infos.append(info)
    return infos


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def load_line(infos: Sequence[Mapping[str, Any]], load_log: Path | None) -> str:
    """A Markdown line on how busy the machine was: the runs' recorded ``max_load``, or
    the median and highest 1-minute load average of ``load_log`` (lines ``<ISO time>
    <1-min> <5-min> <15-min> ...``, as ``/proc/loadavg`` prints them after a time stamp)."""
    loads = [float(line.split()[1]) for line in load_log.read_text().splitlines()
             if len(line.split()) > 1] if load_log is not None else []
    recorded = [i["resources"]["max_load"] for i in infos
                if (i.get("resources") or {}).get("max_load") is not None]
    cpus = infos[0]["environment"]["cpu_count"]
    if loads:
        loads.sort()
        what = f"median {loads[len(loads) // 2]:g}, highest {loads[-1]:g} ({load_log.name})"
    elif recorded:
        what = f"highest {max(recorded):g} (the runs' info.json)"
    else:
        return "- **Machine load**: not recorded"
    return (f"- **Machine load** (1-minute load average on {cpus} CPUs): {what}; above {cpus}, "
            "other work competed with the fits and their seconds are slower than on a quiet "
            "machine")


def provenance(infos: Sequence[Mapping[str, Any]], command: str, results: Path) -> list[str]:
    """Markdown lines: command, commit, machine, cores, dates and hours of the run."""
    env = infos[0]["environment"]
    commits = Counter(f"{i['environment']['git_commit']}" + (" (uncommitted changes)" if
                      i["environment"].get("git_dirty") else "") for i in infos)
    started = min(i["_finished_at"] - i.get("total_s", 0.0) for i in infos)
    finished = max(path.stat().st_mtime for path in results.glob("*.csv")) if any(
        results.glob("*.csv")) else max(i["_finished_at"] for i in infos)
    cores = sorted({i["resources"]["cores"] for i in infos if i.get("resources")})
    models = sorted({i["resources"]["cpu_model"] for i in infos if i.get("resources")})
    most_beside = max((i.get("resources") or {}).get("beside", 0) for i in infos)
    device = env["device"]
    return [
        f"- **Command**: `{command}`",
        "- **Commit**: " + ", ".join(f"`{c}` ({n} runs)" for c, n in commits.items()),
        f"- **Machine**: {env['cpu_count']} CPUs ({', '.join(models) or 'model not recorded'}),"
        f" JAX device {device['platform']} ({device['kind']}), {env['platform']}",
        f"- **Cores per fit**: {', '.join(map(str, cores))}; at most {most_beside + 1} fits "
        "ran at once",
        f"- **When**: {_when(started)} to {_when(finished)}, "
        f"**{(finished - started) / 3600:.2f} hours** from the first fit's start to the last "
        "file",
        "- **Packages**: " + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v),
        lock_line(env["python"]),
    ]


def lock_line(python: str) -> str:
    """The provenance line naming the lock file of the run's Python (``locks/py3.X.txt``)."""
    minor = ".".join(python.split(".")[:2])
    lock = f"locks/py{minor}.txt"
    return (f"- **Lock file**: `{lock}` (the run's Python was {python}): "
            f"`pip install -r {lock} && pip install --no-deps -e .` installs every package "
            "pinned")


def differences(infos: Sequence[Mapping[str, Any]], default_seeds: Sequence[int]) -> list[str]:
    """Markdown lines: how the run's seeds and budgets differ from the default run's."""
    seeds = sorted({i["seed"] for i in infos})
    lines = [f"- Seeds: {seeds} (the default run: {list(default_seeds)})."]
    changed = {}
    for info in infos:
        default = info["config"]["experiment"]["scales"][info["scale"]]["budget_s"]
        if info["budget_s"] != default:
            changed[info["experiment"]] = (info["budget_s"], default)
    for experiment, (budget, default) in sorted(changed.items()):
        lines.append(f"- {experiment}: budget {budget:g} s per run (the default run: "
                     f"{default:g} s).")
    if not changed:
        lines.append("- Budgets: the default run's.")
    return lines


def runs_table(infos: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run: how it ended, its seconds and score, and what it ran on."""
    return pd.DataFrame([{
        "experiment": i["experiment"], "method": i.get("label", i["method"]),
        "seed": i["seed"], "status": i.get("status"), "iterations": i.get("iterations"),
        "clock_s": i.get("wall_s"), "wall_clock_s": i.get("total_s"),
        "final_heldout_lpd": i.get("final_heldout_lpd"), "ran on": describe_resources(i),
    } for i in infos])


def copy_figures(results: Path, out: Path) -> list[Path]:
    """The run's PNG figures, shrunk to :data:`MAX_WIDTH` pixels wide, into ``out/figures``."""
    target = out / "figures"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    written = []
    for png in sorted((results / "figures").glob("*.png")):
        with Image.open(png) as image:
            if image.width > MAX_WIDTH:
                image = image.resize((MAX_WIDTH, round(image.height * MAX_WIDTH / image.width)))
            image.save(target / png.name, optimize=True)
        written.append(target / png.name)
    return written


def write_page(results: Path, out: Path, command: str, default_seeds: Sequence[int],
               load_log: Path | None = None) -> Path:
    """Writes ``out/index.md`` and its files; returns the page's path."""
    infos = read_infos(results)
    out.mkdir(parents=True, exist_ok=True)
    figures = copy_figures(results, out)
    claims = pd.read_csv(results / "claims.csv")
    shutil.copy(results / "claims.csv", out / "claims.csv")
    (out / "summaries").mkdir(exist_ok=True)
    sections = ["# Results of a real run", "",
                "Made by `scripts/publish_results.py` from the run's own files.", "",
                "## Provenance", "", *provenance(infos, command, results),
                load_line(infos, load_log), "",
                "## How this run differs from the default run", "",
                *differences(infos, default_seeds), "",
                "## The paper's claims", "",
                claims.drop(columns=["criterion"]).to_markdown(index=False), ""]
    for summary in sorted((results / "summaries").glob("*.csv")):
        shutil.copy(summary, out / "summaries" / summary.name)
        table = pd.read_csv(summary)
        sections += [f"## {summary.stem}", "", table.to_markdown(index=False, floatfmt=".4g"),
                     ""]
        sections += [f"![{f.stem}](figures/{f.name})" for f in figures
                     if f.stem.startswith(_figure_prefix(infos, summary.stem))] + [""]
    shown = {line for line in sections if line.startswith("![")}
    rest = [f"![{f.stem}](figures/{f.name})" for f in figures
            if f"![{f.stem}](figures/{f.name})" not in shown]
    sections += ["## Other figures", "", *rest, "", "## Every run", "",
                 runs_table(infos).to_markdown(index=False, floatfmt=".4g"), ""]
    page = out / "index.md"
    page.write_text("\n".join(sections))
    return page


def _figure_prefix(infos: Sequence[Mapping[str, Any]], experiment: str) -> str:
    """The accuracy figure's stem prefix of an experiment (``fig4a``), from its config."""
    for info in infos:
        if info["experiment"] == experiment:
            return info["config"]["experiment"]["figure"].split("_")[0] + "_"
    return experiment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the run's results_dir")
    parser.add_argument("--out", type=Path, default=Path("docs/results"))
    parser.add_argument("--command", required=True, help="the command that made the run")
    parser.add_argument("--load-log", type=Path, help="the machine's load averages during "
                        "the run, one '<time> <1-min> <5-min> ...' line each")
    args = parser.parse_args()
    default_seeds = yaml.safe_load((checkout_conf(__file__) / "workflow.yaml").read_text())["seeds"]
    print(write_page(args.results, args.out, args.command, default_seeds, args.load_log))


if __name__ == "__main__":
    main()
