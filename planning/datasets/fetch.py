"""Real data sets from a local mirror or their upstream, always sha256-checked.

``fetch(name, dest_dir)`` writes the files of data set ``name`` into ``dest_dir/name/``:
copied from ``mirror_dir/name/`` when the mirror has them, else downloaded from upstream
(pinned URLs) and, for derived files, made from the originals
(``advi_repro.planning.datasets.derive``). Every
file is checked against the sha256 in ``CHECKSUMS`` and written atomically (a temporary
file, then ``os.replace``), so a file at its final path is always a checked one.

Sources: election88 from the Stan example models (Gelman & Hill's ARM, chapter 14, at a
pinned commit of ``stan-dev/example-models``); the Frey faces from Sam Roweis's data page
(``frey_rawface.mat``) or a pinned copy of it on GitHub. The checksums are of those files
and of the files derived from them (``advi_repro.planning.datasets.derive``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from advi_repro.planning.datasets import derive

CHECKSUMS: dict[str, dict[str, str]] = {
    "election88": {
        "election88_full.csv": "e3b72569322f5e5a2344948920b1132748c46e0054efd7592b6847214477ce96",
        "election88_states.csv": "46786470ae0351ea2f4d3537942e90523635c974c0506ec671203deb5c042ac5",
        "election88.data.json": "e218dab21ddbafaf0063a0cd1f600a5332c60b1307f4e22a38188314ff4a7138",
        "presvote.dta": "48a9cd13e9e12fc3af670485dc4890df2bbfc4e9b185ff98997faf41027bc379",
    },
    "frey_faces": {
        "frey_rawface.npy": "13a0cd943fe56c8a2f4c05bc670b097ae2fda4f9d3a0d5215277712ac02f12e6",
        "frey_rawface.mat": "265a83a23adb081755cd3de375509828e690324d1d60f076b8ecebc840d59c64",
    },
}
"""sha256 of every known file, from the PROVENANCE.md tables."""

FILES: dict[str, tuple[str, ...]] = {
    "election88": ("election88_full.csv", "election88_states.csv"),
    "frey_faces": ("frey_rawface.npy", "frey_rawface.mat"),
}
"""The files ``fetch`` delivers for each data set."""

_EXAMPLE_MODELS = (
    "https://raw.githubusercontent.com/stan-dev/example-models/"
    "2847a61097354785ceda9fba40c7f761d6664491/ARM/Ch.14/"
)
UPSTREAM: dict[str, dict[str, tuple[str, ...]]] = {
    "election88": {
        "election88.data.json": (_EXAMPLE_MODELS + "election88.data.json",),
        "presvote.dta": (_EXAMPLE_MODELS + "presvote.dta",),
    },
    "frey_faces": {
        "frey_rawface.mat": (
            "https://raw.githubusercontent.com/tauhidstanford/GSE/"
            "0ebdc1622e4aa572ed3d9910aaf51bd76e89b40a/frey_rawface.mat",
            "http://www.cs.nyu.edu/~roweis/data/frey_rawface.mat",
        ),
    },
}
"""The originals of each data set and the URLs to try for each, in order."""

DERIVE: dict[str, Callable[[Path], dict[str, bytes]]] = {
    "election88": derive.election88,
    "frey_faces": derive.frey_faces,
}

_CHUNK = 1 << 20
_TIMEOUT_S = 60
_FILE_MODE = 0o644


DEFAULT_MIRROR = Path(__file__).resolve().parents[2].parent / "shared" / "data"
"""Where ``fetch`` looks for a mirror when ``mirror_dir`` is not given: ``../shared/data``
beside the repository root."""


def default_mirror() -> Path | None:
    """:data:`DEFAULT_MIRROR`, when that folder exists."""
    return DEFAULT_MIRROR if DEFAULT_MIRROR.is_dir() else None


def fetch(
    name: str, dest_dir: str | os.PathLike, *, mirror_dir: str | os.PathLike | None = None
) -> Path:
    """Put the checked files of data set ``name`` into ``dest_dir/name/`` and return that folder.

    Files already there with the right sha256 are kept. Missing ones are copied from
    ``mirror_dir/name/``; those the mirror lacks are downloaded (originals) or derived from
    the downloaded originals (``advi_repro.planning.datasets.derive``).

    Args:
        name: one of ``FILES`` ("election88", "frey_faces").
        dest_dir: root folder of the data; the files go to ``dest_dir/name/``.
        mirror_dir: root folder of a local mirror laid out the same way; default
            ``default_mirror()`` (none: download).

    Returns:
        The folder ``dest_dir/name``.

    Raises:
        ValueError: unknown ``name``, a missing ``mirror_dir``, or a file whose sha256 is not
            the expected one (the message names the file, the expected and the actual hash).
        OSError: the mirror lacks a file and no URL of an original could be downloaded;
            the message names the folder the mirror was looked for in, the files it lacks
            and the option that sets it (``mirror_dir``).
    """
    if name not in FILES:
        raise ValueError(f"unknown data set {name!r}; valid data sets: {', '.join(FILES)}")
    if mirror_dir is None:
        mirror = default_mirror()
    else:
        mirror = Path(mirror_dir)
        if not mirror.is_dir():
            raise ValueError(f"mirror_dir {mirror} is not a folder")
    folder = Path(dest_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    checksums = CHECKSUMS[name]

    missing = [f for f in FILES[name] if not _is_checked(folder / f, checksums[f])]
    for file in list(missing):
        source = None if mirror is None else mirror / name / file
        if source is not None and source.is_file():
            with open(source, "rb") as stream:
                _write_checked(folder / file, stream, checksums[file], origin=source)
            missing.remove(file)
    if not missing:
        return folder

    for file, urls in UPSTREAM[name].items():
        if not _is_checked(folder / file, checksums[file]):
            try:
                _download(urls, folder / file, checksums[file])
            except OSError as error:
                raise OSError(_offline_message(name, mirror, missing, file, error)) from error
    derived = DERIVE[name](folder)
    for file in missing:
        if file in derived:
            origin = f"{file} derived from {', '.join(UPSTREAM[name])}"
            _write_bytes_checked(folder / file, derived[file], checksums[file], origin=origin)
    return folder


def _offline_message(name: str, mirror: Path | None, missing: list[str], original: str,
                     error: OSError) -> str:
    """Why ``missing`` files of ``name`` could be neither copied nor downloaded, naming the
    folder the mirror was looked for in and the option (``mirror_dir``) that sets it, in the
    forms that set it: the workflow's ``--config 'overrides=[...]'`` (a top-level
    ``--config mirror_dir=...`` is refused by the workflow's config schema) and ``fit.py``'s
    override."""
    if mirror is None:
        looked = (f"no data mirror: mirror_dir is not set and the default mirror "
                  f"{DEFAULT_MIRROR} does not exist")
    else:
        looked = f"the mirror (mirror_dir) {mirror / name} lacks {', '.join(missing)}"
    return (f"{looked}; downloading the original {original} to make them failed too: {error}."
            f" Offline, set mirror_dir to a folder that holds {name}/{', '.join(missing)}:"
            " snakemake ... --config 'overrides=[\"mirror_dir=/path/to/mirror\"]' (a Hydra"
            " override, not --config mirror_dir=...), or python scripts/fit.py ..."
            " mirror_dir=/path/to/mirror")


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _is_checked(path: Path, expected: str) -> bool:
    return path.is_file() and sha256_of(path) == expected


def _download(urls: tuple[str, ...], target: Path, expected: str) -> None:
    """Download the first URL that answers into ``target``, checked against ``expected``."""
    errors = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
                _write_checked(target, response, expected, origin=url)
            return
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            errors.append(f"{url}: {error}")
    raise OSError(f"could not download {target.name}; tried " + "; ".join(errors))


def _write_bytes_checked(target: Path, contents: bytes, expected: str, *, origin: object) -> None:
    _check(hashlib.sha256(contents).hexdigest(), expected, origin)
    _atomic_write(target, lambda out: out.write(contents))


def _write_checked(target: Path, stream: BinaryIO, expected: str, *, origin: object) -> None:
    """Copy ``stream`` to ``target`` atomically if its sha256 is ``expected``."""

    def copy(out: BinaryIO) -> None:
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
        _check(digest.hexdigest(), expected, origin)

    _atomic_write(target, copy)


def _check(actual: str, expected: str, origin: object) -> None:
    if actual != expected:
        raise ValueError(f"sha256 mismatch for {origin}: expected {expected}, got {actual}")


def _atomic_write(target: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write through a temporary file beside ``target``, then rename it; nothing on failure."""
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            write(out)
        os.chmod(temporary, _FILE_MODE)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

