"""Atomic writes: a reader sees the old file (or folder) or the new one, never half of one
and never a mix of the two."""

from __future__ import annotations

import glob
import json
import math
import numbers
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """Opens a temporary file beside ``path``; on success it replaces ``path`` (os.replace).

    The file gets the mode ``open()`` would give it (0666 less the umask). On an exception
    the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp's 0600 -> as open() would make it
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def strict_json(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, +-inf; numpy's included) as None, which
    strict JSON writes as ``null``; other reals as Python floats. Containers are copied."""
    if isinstance(obj, Mapping):
        return {key: strict_json(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict_json(value) for value in obj]
    if isinstance(obj, numbers.Real) and not isinstance(obj, numbers.Integral):
        value = float(obj)
        return value if math.isfinite(value) else None
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Writes ``obj`` as indented strict JSON (RFC 8259), atomically: non-finite numbers as
    ``null`` (:func:`strict_json`), other values JSON cannot hold as their ``str``."""
    with atomic_open(path) as f:
        json.dump(strict_json(obj), f, indent=2, sort_keys=False, default=str, allow_nan=False)
        f.write("\n")


PARTIAL_SUFFIX = ".partial"
"""A folder's name plus this suffix: the files of a :func:`staged_dir` block that did not
finish (interrupted or failed)."""


def partial_path(path: str | os.PathLike) -> Path:
    """Where :func:`staged_dir` keeps an unfinished block's files: ``<path>.partial``."""
    path = Path(path)
    return path.with_name(path.name + PARTIAL_SUFFIX)


@contextmanager
def staged_dir(path: str | os.PathLike) -> Iterator[Path]:
    """A fresh, empty folder whose contents replace the folder ``path`` when the block ends.

    The folder gets the mode ``mkdir`` would give it (0777 less the umask).

    The block writes into ``.<name>.running-<pid>-<random>`` beside ``path``. On success
    the old ``path`` (if any) is renamed aside, the new folder renamed to ``path``, and the
    old one and any ``<path>.partial`` removed: a reader sees the old folder whole, then
    for an instant none, then the new one whole, never a mix. On an exception (an
    interrupt included) ``path`` is left as it was, the block's files are kept as
    ``<path>.partial`` (replacing an older one) and the exception propagates. Folders left
    by a process killed outright (SIGKILL) are removed by the next ``staged_dir(path)``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(path)
    work = Path(tempfile.mkdtemp(dir=path.parent,
                                 prefix=f".{path.name}.running-{os.getpid()}-"))
    os.chmod(work, 0o777 & ~current_umask())  # mkdtemp's 0700 -> as mkdir would make it
    try:
        yield work
    except BaseException:
        _replace_dir(work, partial_path(path))
        raise
    _replace_dir(work, path)
    shutil.rmtree(partial_path(path), ignore_errors=True)


def _replace_dir(new: Path, path: Path) -> None:
    """Renames the folder ``new`` to ``path``, removing what ``path`` held."""
    old = None
    if path.exists():
        old = path.with_name(f".{path.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(new, path)
    if old is not None:
        shutil.rmtree(old)


def _remove_orphans(path: Path) -> None:
    """Removes the ``.running-<pid>-*`` and ``.old-<pid>`` folders of ``path`` whose
    process no longer exists."""
    for kind in ("running", "old"):
        prefix = f".{path.name}.{kind}-"
        for folder in path.parent.glob(f"{glob.escape(prefix)}*"):
            pid = folder.name.removeprefix(prefix).split("-")[0]
            if pid.isdigit() and not process_alive(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_posterior_mean(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a run's ``posterior_mean.npz`` (written by
    ``advi_repro.runners.posterior.PosteriorMean``): one per latent site, ``num_draws`` and meta."""
    with np.load(path) as data:
        return {key: data[key] for key in data.files}
