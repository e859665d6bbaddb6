"""A data file of your own (``data.source: file``): a CSV or .npy file split at random into
training and held-out rows, its columns given the model's argument names.

- CSV (a header row): ``columns`` maps each argument of the model to a column name, or to a
  list of column names for a matrix argument, e.g. ``{X: [x1, x2], y: count}``; without
  ``columns`` every column is an argument of its own name.
- .npy (a 2-D array): ``columns`` maps each argument to a column index or a list of them,
  e.g. ``{X: [0, 1], y: 2}``.

Integer columns stay integers (int32, e.g. counts), the others become float32. The same
argument names key the training data (the model's arguments) and the held-out data (those of
its ``log_likelihood``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd

from advi_repro.models import Problem

Columns = Mapping[str, str | int | Sequence[str | int]]
"""Argument name -> a column (name or index) or a list of columns."""


def split_file(path: str | os.PathLike, *, seed: int, heldout_fraction: float = 0.2,
               columns: Columns | None = None) -> Problem:
    """The rows of ``path`` split at random, seeded, into training and held-out data.

    Args:
        path: a ``.csv`` file with a header row, or a ``.npy`` file holding a 2-D array.
        seed: numpy Generator seed of the split (``experiment.data.seed``).
        heldout_fraction: the share of rows held out, in (0, 1).
        columns: the model's argument names and their columns (the module docstring);
            required for .npy.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: another kind of file, a column the file lacks (the message lists the
            file's columns), a fraction out of range, or a split that leaves a part empty.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path {path} does not exist or is not a file")
    arrays = _named_columns(_read(path), columns, path)
    num_rows = len(next(iter(arrays.values())))
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in (0, 1), got {heldout_fraction}")
    num_heldout = round(heldout_fraction * num_rows)
    if not 1 <= num_heldout < num_rows:
        raise ValueError(f"heldout_fraction={heldout_fraction} holds out {num_heldout} of the "
                         f"{num_rows} rows of {path}: at least one row must be on each side")
    order = np.random.default_rng(seed).permutation(num_rows)
    heldout, train = np.sort(order[:num_heldout]), np.sort(order[num_heldout:])
    return Problem(
        train={name: jnp.asarray(values[train]) for name, values in arrays.items()},
        heldout={name: jnp.asarray(values[heldout]) for name, values in arrays.items()},
        num_heldout=int(num_heldout),
        meta={"source": os.fspath(path), "seed": seed, "n_train": int(len(train)),
              "n_heldout": int(num_heldout), "heldout_fraction": heldout_fraction,
              "arguments": {name: list(values.shape[1:]) for name, values in arrays.items()}},
    )


def _read(path: Path) -> pd.DataFrame:
    """The file as a table: a CSV's columns by name, an .npy array's by index."""
    if path.suffix == ".csv":
        return pd.read_csv(path)
    if path.suffix == ".npy":
        array = np.load(path)
        if array.ndim != 2:
            raise ValueError(f"{path}: an .npy data file must hold a 2-D array (rows, "
                             f"columns), got shape {array.shape}")
        return pd.DataFrame(array)
    raise ValueError(f"data.path {path}: a data file of your own must be .csv or .npy")


def _named_columns(table: pd.DataFrame, columns: Columns | None,
                   path: Path) -> dict[str, np.ndarray]:
    """``{argument: (N,) or (N, k) array}`` of ``table`` by ``columns``."""
    if columns is None:
        if path.suffix == ".npy":
            raise ValueError(f"{path}: an .npy file has no column names; give load.columns, "
                             "the model's argument names and their column indices")
        columns = {str(name): name for name in table.columns}
    arrays = {}
    for name, chosen in columns.items():
        several = isinstance(chosen, Sequence) and not isinstance(chosen, str)
        picked = list(chosen) if several else chosen
        missing = [c for c in (picked if several else [picked]) if c not in table.columns]
        if missing:
            raise ValueError(f"argument {name!r}: {path} has no column {missing}; its "
                             f"columns: {', '.join(map(str, table.columns))}")
        values = table[picked].to_numpy()
        is_int = np.issubdtype(values.dtype, np.integer)
        arrays[name] = values.astype(np.int32 if is_int else np.float32)
    return arrays
