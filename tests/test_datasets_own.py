"""A data file of your own (data.source: file): a CSV or .npy split at random into training
and held-out rows under the model's argument names, and the errors that name what is wrong."""

import numpy as np
import pandas as pd
import pytest

from advi_repro.planning.datasets.own import split_file

COLUMNS = {"X": ["x1", "x2"], "y": "count"}


@pytest.fixture
def counts_csv(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"x1": rng.normal(size=50), "x2": np.arange(50) / 10.0,
                          "count": np.arange(50), "unused": "a"})
    path = tmp_path / "counts.csv"
    table.to_csv(path, index=False)
    return path


def test_a_csv_is_split_into_the_models_arguments(counts_csv):
    problem = split_file(counts_csv, seed=3, heldout_fraction=0.2, columns=COLUMNS)
    assert problem.train["X"].shape == (40, 2) and problem.heldout["X"].shape == (10, 2)
    assert problem.train["y"].dtype == np.int32 and problem.train["X"].dtype == np.float32
    assert problem.num_heldout == 10 and problem.meta["n_train"] == 40
    rows = np.concatenate([problem.train["y"], problem.heldout["y"]])
    assert sorted(rows.tolist()) == list(range(50))  # every row once: count is the row
    np.testing.assert_allclose(problem.heldout["X"][:, 1], problem.heldout["y"] / 10.0)
    again = split_file(counts_csv, seed=3, heldout_fraction=0.2, columns=COLUMNS)
    other = split_file(counts_csv, seed=4, heldout_fraction=0.2, columns=COLUMNS)
    np.testing.assert_array_equal(again.heldout["y"], problem.heldout["y"])
    assert not np.array_equal(other.heldout["y"], problem.heldout["y"])


def test_without_columns_every_csv_column_is_an_argument_of_its_name(tmp_path):
    path = tmp_path / "x.csv"
    pd.DataFrame({"x": [1.5, 2.5, 3.5, 4.5], "n": [1, 2, 3, 4]}).to_csv(path, index=False)
    problem = split_file(path, seed=0, heldout_fraction=0.25)
    assert set(problem.train) == {"x", "n"} and problem.heldout["n"].shape == (1,)


def test_an_npy_takes_its_columns_by_index(tmp_path):
    path = tmp_path / "data.npy"
    np.save(path, np.arange(30.0).reshape(10, 3))
    problem = split_file(path, seed=0, heldout_fraction=0.3, columns={"X": [0, 1], "y": 2})
    assert problem.train["X"].shape == (7, 2) and problem.heldout["y"].shape == (3,)
    np.testing.assert_array_equal(problem.train["y"], problem.train["X"][:, 0] + 2)
    with pytest.raises(ValueError, match="an .npy file has no column names; give load.columns"):
        split_file(path, seed=0)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"columns": {"X": ["x1", "x3"], "y": "count"}},
     r"argument 'X': .*counts.csv has no column \['x3'\]; its columns: x1, x2, count, unused"),
    ({"columns": COLUMNS, "heldout_fraction": 1.5}, r"heldout_fraction must be in \(0, 1\)"),
    ({"columns": COLUMNS, "heldout_fraction": 0.001}, "holds out 0 of the 50 rows"),
])
def test_a_bad_column_or_fraction_is_named(counts_csv, kwargs, message):
    with pytest.raises(ValueError, match=message):
        split_file(counts_csv, seed=0, **kwargs)


def test_a_missing_file_or_another_kind_of_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="data.path .*nowhere.csv does not exist"):
        split_file(tmp_path / "nowhere.csv", seed=0)
    (tmp_path / "data.parquet").write_text("")
    with pytest.raises(ValueError, match="must be .csv or .npy"):
        split_file(tmp_path / "data.parquet", seed=0)
