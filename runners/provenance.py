"""What a run records about where it ran: package versions, device, code version."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

import jax

from advi_repro.planning.rerun import DISTRIBUTION, code_version

PACKAGES = (DISTRIBUTION, "jax", "jaxlib", "numpyro", "optax", "numpy", "scipy", "arviz",
            "hydra-core", "omegaconf")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Python and package versions (``advi-repro``, this package, first), the JAX device,
    CPU count, ``XLA_FLAGS``, and the code's git commit and whether its tree had
    uncommitted changes (both None outside a git checkout:
    :func:`advi_repro.planning.rerun.code_version`)."""
    device = jax.devices()[0]
    code = code_version()
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
        "git_commit": code["git_commit"],
        "git_dirty": code["git_dirty"],
    }
