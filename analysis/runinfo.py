"""What the report reads from runs' ``info.json``: what each run's seconds were measured
on, the code that made it, and where an experiment's data came from.

Seconds are comparable between runs only when they ran on the same kind of device with the
same number of cores of the same CPU model; the report shows each run's set-up and the
claims compare seconds only between runs of one set-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def timing_setup(info: Mapping[str, Any]) -> str | None:
    """A run's timing set-up, e.g. ``cpu x1 (Intel(R) Xeon(R) ...)`` or ``gpu NVIDIA H100
    80GB HBM3 (host: 1 x Intel ...)``; None for a run that did not record it (made before
    ``resources`` was recorded)."""
    resources = info.get("resources")
    device = (info.get("environment") or {}).get("device") or {}
    if not resources or not device:
        return None
    cpu = f"{resources['cores']} x {resources['cpu_model']}"
    if device.get("platform") == "cpu":
        return f"cpu, {cpu}"
    return f"{device.get('platform')} {device.get('kind')} (host: {cpu})"


def describe_resources(info: Mapping[str, Any]) -> str:
    """One line for the report's Runs page: set-up, CPU ids, how they were pinned and how
    many fits ran beside it, e.g. ``cpu, 1 x Intel ...; CPUs 3 (slot); beside 1 fit``."""
    resources = info.get("resources")
    setup = timing_setup(info)
    if not resources or setup is None:
        return "not recorded"
    ids = resources.get("cpu_ids")
    cpus = "not pinned" if ids is None else (
        f"CPUs {', '.join(str(i) for i in ids)} ({resources['pinned_by']})")
    beside = resources.get("beside", 0)
    load = resources.get("max_load")
    busy = f"; load up to {load:g}" if load is not None else ""
    return f"{setup}; {cpus}; beside {beside} fit{'s' if beside != 1 else ''}{busy}"


def data_origin(infos: Sequence[Mapping[str, Any]]) -> str:
    """Where an experiment's data came from, for the reproduction table, from the
    ``info.json`` of its runs (``config`` is the run's resolved Hydra config).

    The data of the image mixture (E5, E6: ``experiment.data.source`` ``imageclef``) are a
    simulated stand-in unless the run-wide ``data.image_dir`` named a folder of real images.

    Raises:
        ValueError: no runs.
    """
    if not infos:
        raise ValueError("an experiment needs at least one run's info.json")
    config = infos[0]["config"]
    data = config["experiment"].get("data") or {}
    image_dir = (config.get("data") or {}).get("image_dir")
    if data.get("source") == "imageclef":
        return (f"real images from {image_dir}" if image_dir else
                "simulated stand-in for the imageCLEF histograms "
                "(advi_repro.planning.datasets.simulate."
                f"{data.get('name')}; no data.image_dir given)")
    if data.get("source") == "file":
        return f"file {data.get('path')}"
    return f"{data.get('source', '')} {data.get('name', '')}".strip()


def run_code(info: Mapping[str, Any]) -> dict[str, Any]:
    """The code version a run recorded (``environment``: ``git_commit``, ``git_dirty`` and
    ``packages["advi-repro"]``), in the form of
    :func:`advi_repro.planning.rerun.code_version`; None where not recorded."""
    environment = info.get("environment") or {}
    return {"git_commit": environment.get("git_commit"),
            "git_dirty": environment.get("git_dirty"),
            "version": (environment.get("packages") or {}).get("advi-repro")}


def describe_code(code: Mapping[str, Any]) -> str:
    """``<commit, 12 digits>``, plus `` with uncommitted changes`` when the tree was dirty;
    ``an unknown commit (advi-repro <version>)`` outside a git checkout."""
    commit = code.get("git_commit")
    if commit is None:
        return f"an unknown commit (advi-repro {code.get('version') or 'unknown'})"
    return commit[:12] + (" with uncommitted changes" if code.get("git_dirty") else "")


def same_code(info: Mapping[str, Any], checkout: Mapping[str, Any]) -> bool | None:
    """Whether a run was made by ``checkout``'s code (the code the workflow runs now,
    :func:`advi_repro.planning.rerun.code_version`): True for the same commit without
    uncommitted changes on either side (outside git checkouts: the same package version),
    False for another commit, None where uncommitted changes leave it open."""
    run = run_code(info)
    commit = checkout.get("git_commit")
    if run["git_commit"] is None and commit is None:
        return run["version"] == checkout.get("version")
    if run["git_commit"] != commit:
        return False
    if run["git_dirty"] or checkout.get("git_dirty"):
        return None
    return True


def other_code(info: Mapping[str, Any], checkout: Mapping[str, Any]) -> str | None:
    """How the code that made a run differs from ``checkout``'s (:func:`same_code`), e.g.
    ``made by code at 1a2b3c4d5e6f, not this checkout's 6f5e4d3c2b1a``; None where it is
    the same."""
    same, run = same_code(info, checkout), run_code(info)
    if same is None:
        trees = [tree for tree, dirty in (("the run's", run["git_dirty"]),
                                          ("this checkout's", checkout.get("git_dirty")))
                 if dirty]
        return (f"made at this checkout's commit {run['git_commit'][:12]}; uncommitted "
                f"changes in {' and '.join(trees)} tree: cannot tell whether the code was "
                "the same")
    if same:
        return None
    return f"made by code at {describe_code(run)}, not this checkout's {describe_code(checkout)}"


def code_note(infos: Sequence[Mapping[str, Any]], checkout: Mapping[str, Any]) -> str | None:
    """A paragraph (HTML) for the page of the runs: which runs were made by code other than
    ``checkout``'s (:func:`same_code` False) and how to redo them, and how many cannot be
    told apart for uncommitted changes; None when all were made by the checkout's code."""
    others = [info for info in infos if same_code(info, checkout) is False]
    unsure = sum(same_code(info, checkout) is None for info in infos)
    lines = []
    if others:
        runs = ", ".join(f"{info['experiment']} {info['method']} seed {info['seed']}"
                         for info in others)
        lines.append(
            f"<b>{len(others)} of {len(infos)} runs were made by code other than this "
            f"checkout's</b> ({describe_code(checkout)}; column <i>code</i>): {runs}. "
            "Snakemake does not redo runs when the code changes; to redo them, run the "
            "workflow's command again with <code>--forcerun fit</code> (every run), or with "
            "<code>--forcerun</code> and the runs' trace.csv files (docs/workflow.md).")
    if unsure:
        lines.append(f"{unsure} of {len(infos)} runs were made, or this page was made, from a "
                     "checkout with uncommitted changes: whether their code was this "
                     "checkout's cannot be told (column <i>code</i>).")
    return " ".join(lines) or None
