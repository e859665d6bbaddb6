"""What a run records about where it ran: package versions, device, code version."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from typing import Any

import jax

from advi_repro.planning.paths import REPO_ROOT

PACKAGES = ("jax", "jaxlib", "numpyro", "optax", "numpy", "scipy", "hydra-core", "omegaconf")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def environment() -> dict[str, Any]:
    """Python and package versions, the JAX device, CPU count, ``XLA_FLAGS`` and the git
    commit."""
    device = jax.devices()[0]
    status = _git("status", "--porcelain")
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": {name: _version(name) for name in PACKAGES},
        "device": {
            "platform": device.platform,
            "kind": device.device_kind,
            "count": jax.device_count(),
        },
        "cpu_count": os.cpu_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
    }
