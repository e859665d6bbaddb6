"""Where a run's inputs and outputs live, relative to ``results_dir`` (the working directory's
``results/`` by default). ``scripts/fit.py`` and the workflow's rules both take paths from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def experiment_runs_dir(results_dir: str | Path, experiment: str) -> Path:
    """``<results_dir>/runs/<experiment>``: one folder per method below it."""
    return Path(results_dir) / "runs" / experiment


def run_dir(results_dir: str | Path, experiment: str, method: str, seed: int | str) -> Path:
    """``<results_dir>/runs/<experiment>/<method>/seed<k>``: trace.csv and info.json."""
    return experiment_runs_dir(results_dir, experiment) / method / f"seed{seed}"


def simulated_data_dir(results_dir: str | Path, name: str) -> Path:
    """``<results_dir>/data/simulated/<name>``: the simulations of one simulator."""
    return Path(results_dir) / "data" / "simulated" / name


def simulated_data_path(
    results_dir: str | Path, name: str, seed: int, kwargs: dict[str, Any]
) -> Path:
    """``<simulated_data_dir>/seed<k>_<key><value>...npz``: one file per simulation.

    The simulator's keyword arguments (sizes) are in the name, so changing a size makes a
    new file rather than reusing a stale one.
    """
    sizes = "".join(f"_{key}{kwargs[key]}" for key in sorted(kwargs))
    return simulated_data_dir(results_dir, name) / f"seed{seed}{sizes}.npz"


def fetched_data_dir(results_dir: str | Path, name: str) -> Path:
    """``<results_dir>/data/fetched/<name>``: the checked copy of a real data set."""
    return Path(results_dir) / "data" / "fetched" / name
