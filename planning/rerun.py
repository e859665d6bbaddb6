"""What tells a run apart from an earlier one of the same folder: its settings and its code.

- Settings: :func:`config_sha256` hashes the part of a run's resolved Hydra config that can
  change its result (:func:`result_settings`). The workflow's ``fit`` rule holds the hash as
  a parameter, so Snakemake replans exactly the runs whose hash changed, whether a YAML file
  under ``conf/`` or the command line's overrides changed it (docs/workflow.md, "Interrupting,
  resuming, rerunning").
- Code: :func:`code_version` is the git commit of the checkout the workflow's packages are
  imported from, whether its tree had uncommitted changes, and the installed package's
  version. Each run's ``info.json`` records it (``environment``), and the report's page of
  the runs marks runs made by code other than the checkout's
  (:func:`advi_repro.analysis.runinfo.other_code`); code is not part of the hash, so a new
  commit does not redo hours of runs unasked.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from advi_repro.planning.paths import REPO_ROOT

DISTRIBUTION = "advi-repro"
"""The installed distribution of the library and the workflow's packages."""

NOT_RESULT_KEYS = ("results_dir", "mirror_dir", "cores", "input_data", "output_dir")
"""Top-level keys that do not change a run's result, left out of its hash:

- ``results_dir``, ``input_data``, ``output_dir``: where the inputs and outputs are, already
  in every path Snakemake compares (the data's own settings are in ``experiment.data``);
- ``mirror_dir``: where the real data sets are copied from; the copies are sha256-checked,
  so every mirror gives the same bytes;
- ``cores``: the CPUs the fit is pinned to. They change its seconds, not what it computes:
  the draws come from the run's seed (at most the last bits of a large matrix product can
  differ, as XLA splits it among threads). Seconds vary from run to run anyway (machine,
  load), and Snakemake gives a fit fewer cores than declared when ``--cores`` is smaller,
  which must not redo it. Rerun on purpose for timings on other cores (``--forcerun fit``);
  each ``info.json`` records the cores it had (``resources``).
"""

EXPERIMENT_NOT_RESULT_KEYS = ("figure", "title", "claim", "claim_id", "paper_code", "methods",
                              "reference_method", "factors")
"""Keys of ``experiment`` that only the report reads: its figure, captions, the paper's
claim it tests and where the paper shows the model's code, the list of
methods (adding a method to it adds a run, not a change to the others), the reference the
others are timed against, the factors figure."""


def result_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a resolved run config (``OmegaConf.to_container(cfg, resolve=True)``,
    as ``info.json`` records it under ``config``) that can change the run's result: all but
    :data:`NOT_RESULT_KEYS` and :data:`EXPERIMENT_NOT_RESULT_KEYS`; of ``experiment.scales``,
    the run's own scale only (a paper-scale budget does not change a smoke run); and no
    ``None`` values, which mean "the default" as an absent key does, so that a new option
    whose default is ``None`` changes no run's hash."""
    settings = {k: v for k, v in config.items() if k not in NOT_RESULT_KEYS}
    experiment = {k: v for k, v in (settings.get("experiment") or {}).items()
                  if k not in EXPERIMENT_NOT_RESULT_KEYS}
    if "scales" in experiment:
        scale = (settings.get("scale") or {}).get("name")
        experiment["scales"] = {scale: (experiment["scales"] or {}).get(scale)}
    settings["experiment"] = experiment
    return _without_none(settings)


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value]
    return value


def config_sha256(config: Mapping[str, Any]) -> str:
    """A short hash (the first 16 hex digits of a sha256) of :func:`result_settings`, as
    canonical JSON (keys sorted): equal for two configs that give the same result."""
    text = json.dumps(result_settings(config), sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def code_version(root: str | Path = REPO_ROOT) -> dict[str, Any]:
    """``{"git_commit", "git_dirty", "version"}`` of the code in ``root`` (default: the
    checkout the workflow's packages are imported from): the commit checked out, whether the
    tree has uncommitted changes (``git status``, untracked files included), and the version
    of the installed ``advi-repro``. The git fields are None where ``root`` is not the top of
    a git checkout (an installed copy, an unpacked archive) or git is missing; the version
    is None where the package is not installed."""
    top = _git(Path(root), "rev-parse", "--show-toplevel")
    at_top = top is not None and Path(top).resolve() == Path(root).resolve()
    status = _git(Path(root), "status", "--porcelain") if at_top else None
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {
        "git_commit": _git(Path(root), "rev-parse", "HEAD") if at_top else None,
        "git_dirty": None if status is None else bool(status),
        "version": version,
    }
