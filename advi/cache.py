"""JAX's persistent compilation cache, on by default for ``advi`` users.

Compiling the ADVI functions of a model takes seconds (most of a small fit's time); JAX can
keep compiled executables on disk and reuse them in later processes with the same model,
shapes, options, JAX version and machine. ``import advi`` turns this on in a user cache
folder unless the user chose otherwise:

- ``ADVI_COMPILATION_CACHE`` unset: ``$XDG_CACHE_HOME/advi/jax`` (``~/.cache/advi/jax``);
- ``ADVI_COMPILATION_CACHE=0`` (or ``off``, ``false``, ``no``): off;
- ``ADVI_COMPILATION_CACHE=/some/folder``: that folder;
- a cache folder already configured in JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)``) is left as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

ENV_VAR = "ADVI_COMPILATION_CACHE"
OFF = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.05
"""Executables that took less than this to compile are not written (JAX's default is 1 s,
which would skip most of a small model's functions; with :mod:`advi.xla_options` E1's
start functions and sampler compile in 0.06-0.13 s)."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/advi/jax``, or ``~/.cache/advi/jax``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "advi" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on (module docstring for the defaults).

    Args:
        path: the folder; None reads ``ADVI_COMPILATION_CACHE`` and falls back to
            :func:`default_cache_dir`.

    Returns:
        the folder in use, or None when the cache is off (by the environment variable, or
        because the folder cannot be created: then nothing is cached and nothing fails).
    """
    if path is None:
        configured = jax.config.jax_compilation_cache_dir
        if configured:
            return Path(configured)
        setting = os.environ.get(ENV_VAR, "")
        if setting.strip().lower() in OFF:
            return None
        path = setting or default_cache_dir()
    folder = Path(path).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return folder
