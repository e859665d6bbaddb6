"""JAX's persistent compilation cache, on by default for ``advi`` fits.

Compiling the ADVI functions of a model takes seconds (most of a small fit's time); JAX can
keep compiled executables on disk and reuse them in later processes with the same model,
shapes, options, JAX version and machine. ``import advi`` changes no JAX setting. The first
:func:`advi.fit` of a process turns the cache on (:func:`enable_default_cache`) unless the
user chose otherwise:

- a cache folder already configured in JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)``), or the cache disabled in JAX
  (``jax_enable_compilation_cache=False``), is left as it is;
- ``ADVI_COMPILATION_CACHE`` unset: ``$XDG_CACHE_HOME/advi/jax`` (``~/.cache/advi/jax``);
- ``ADVI_COMPILATION_CACHE=0`` (or ``off``, ``false``, ``no``): off;
- ``ADVI_COMPILATION_CACHE=/some/folder``: that folder.

Turning it on sets two JAX options, ``jax_compilation_cache_dir`` and
``jax_persistent_cache_min_compile_time_secs`` (:data:`MIN_COMPILE_SECONDS`), for the rest of
the process; :func:`enable_compilation_cache` does the same at once, explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

ENV_VAR = "ADVI_COMPILATION_CACHE"
OFF = ("0", "off", "false", "no")
MIN_COMPILE_SECONDS = 0.05
"""Seconds: executables that took less than this to compile are not written (JAX's option
``jax_persistent_cache_min_compile_time_secs``, whose default is 1 s). Lower than JAX's
default because that would skip most of a small model's functions, a fit's start functions
and its sampler among them (measurements: benchmarks/README.md, "Measurements behind the
library's defaults")."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/advi/jax``, or ``~/.cache/advi/jax``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "advi" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on now (module docstring for the defaults).

    Sets the JAX options ``jax_compilation_cache_dir`` (to the folder) and
    ``jax_persistent_cache_min_compile_time_secs`` (to :data:`MIN_COMPILE_SECONDS`) unless
    a folder is configured in JAX already and ``path`` is None.

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


_default_tried = False


def enable_default_cache() -> Path | None:
    """What the first :func:`advi.fit` of a process calls: :func:`enable_compilation_cache`
    once, unless JAX's cache is disabled (``jax_enable_compilation_cache=False``); later
    calls change nothing.

    Returns:
        the folder in use, or None when the cache is off.
    """
    global _default_tried
    if not _default_tried:
        _default_tried = True
        if jax.config.jax_enable_compilation_cache:
            return enable_compilation_cache()
    folder = jax.config.jax_compilation_cache_dir
    return Path(folder) if folder else None
