"""trace.csv: one valid CSV after every checkpoint; info.json written atomically."""

import json

import pandas as pd
import pytest

from advi_repro.planning.files import atomic_open, write_json
from advi_repro.runners.trace import TraceWriter


def _row(iteration, **extra):
    return {"iteration": iteration, "wall_s": 0.1 * iteration, "heldout_lpd": -1.0,
            "num_draws": 10, **extra}


def test_trace_is_a_complete_csv_after_every_row(tmp_path):
    path = tmp_path / "run" / "trace.csv"
    trace = TraceWriter(path, identity={"experiment": "e", "method": "m", "seed": 3})
    for iteration in (1, 2, 3):
        trace.append(**_row(iteration, elbo=-5.0))
        table = pd.read_csv(path)
        assert list(table["iteration"]) == list(range(1, iteration + 1))
    assert list(table.columns) == ["experiment", "method", "seed", "iteration", "wall_s",
                                   "heldout_lpd", "num_draws", "elbo"]
    assert trace.last["iteration"] == 3
    assert [p.name for p in path.parent.iterdir()] == ["trace.csv"]  # no temporary left


def test_trace_rejects_rows_without_the_checkpoint_columns_or_with_new_ones(tmp_path):
    trace = TraceWriter(tmp_path / "trace.csv", identity={})
    with pytest.raises(ValueError, match="heldout_lpd"):
        trace.append(iteration=1, wall_s=0.0, num_draws=1)
    trace.append(**_row(1))
    with pytest.raises(ValueError, match="columns"):
        trace.append(**_row(2, elbo=1.0))


def test_atomic_open_leaves_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "info.json"
    write_json(path, {"a": 1})
    with pytest.raises(RuntimeError), atomic_open(path) as f:
        f.write("partial")
        raise RuntimeError
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["info.json"]
