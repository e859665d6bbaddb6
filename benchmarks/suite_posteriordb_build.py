"""Adds posteriors to ``suite_posteriordb.json`` from a checkout of posteriordb.

    git clone https://github.com/stan-dev/posteriordb
    python benchmarks/suite_posteriordb_build.py posteriordb arK arma11 ...

For each name of :data:`suite_posteriordb.SOURCES` given, it reads the posterior's
description (``posterior_database/posteriors/<posterior>.json``), its data
(``data/data/<data>.json.zip``) and its reference draws
(``reference_posteriors/draws/draws/<posterior>.json.zip``: Stan's NUTS, 10 chains of
1,000), and stores the data the NumPyro port takes (in that order) with the reference
draws' means and standard deviations (over all chains, ddof 0, rounded to 6 decimals), in
the draws' order of quantities (data longer than ``suite_posteriordb.INLINE_MAX_CHARS`` in
a gzip file beside it). Posteriors already in the file and not named are kept.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import suite_posteriordb as posteriordb


def _zipped_json(path: Path) -> Any:
    """The one JSON file inside the zip at ``path``."""
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as archive:
        return json.loads(archive.read(archive.namelist()[0]))


def entry(root: Path, name: str) -> dict[str, Any]:
    """The stored entry of posterior ``name`` (:data:`suite_posteriordb.SOURCES`) from the
    posteriordb checkout at ``root``."""
    posterior, keep = posteriordb.SOURCES[name]
    base = root / "posterior_database"
    described = json.loads((base / "posteriors" / f"{posterior}.json").read_text())
    data = _zipped_json(base / "data" / "data" / f"{described['data_name']}.json.zip")
    chains = _zipped_json(base / "reference_posteriors" / "draws" / "draws"
                          / f"{described['reference_posterior_name']}.json.zip")
    quantities = list(chains[0])
    draws = np.stack([np.concatenate([np.asarray(c[q], np.float64) for c in chains])
                      for q in quantities], axis=-1)
    return {"data_file": f"{described['data_name']}.json", "posterior": posterior,
            "quantities": quantities, "data": {k: data[k] for k in keep},
            "mean": [round(float(m), 6) for m in draws.mean(0)],
            "sd": [round(float(s), 6) for s in draws.std(0)]}


def store(entry: dict[str, Any], name: str, folder: Path) -> dict[str, Any]:
    """``entry`` as ``suite_posteriordb.json`` keeps it: where its data's JSON is longer than
    :data:`suite_posteriordb.INLINE_MAX_CHARS`, the data written to ``folder /
    suite_posteriordb_<name>.json.gz`` (the same bytes on every run) and named by the
    entry's ``data_gz`` in its place."""
    text = json.dumps(entry["data"], separators=(",", ":"))
    if len(text) <= posteriordb.INLINE_MAX_CHARS:
        return entry
    path = folder / f"suite_posteriordb_{name}.json.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    return {**{k: v for k, v in entry.items() if k != "data"}, "data_gz": path.name}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("posteriordb", type=Path, help="a checkout of stan-dev/posteriordb")
    parser.add_argument("names", nargs="+", choices=sorted(posteriordb.SOURCES))
    args = parser.parse_args(argv)
    stored = json.loads(posteriordb.DATA.read_text())
    commit = subprocess.run(["git", "-C", str(args.posteriordb), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout.strip()
    for name in args.names:
        stored["posteriors"][name] = store(entry(args.posteriordb, name), name,
                                           posteriordb.DATA.parent)
        print(f"{name}: {stored['posteriors'][name]['posterior']} at {commit or '?'}")
    posteriordb.DATA.write_text(json.dumps(stored, separators=(",", ":")))


if __name__ == "__main__":
    main()
