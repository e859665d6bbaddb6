"""The checkpoint both runners record: score, posterior mean and trace row from one call."""

import numpy as np
import pandas as pd
import pytest

from advi_repro.planning.files import read_posterior_mean
from advi_repro.runners.checkpoint import record_checkpoint
from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.scoring import RunningLogMeanExp, heldout_lpd
from advi_repro.runners.trace import TraceWriter


def log_likelihood(draws):
    """(S, 2): a held-out point scored as log p = -|mu - y| for y in (0, 1)."""
    return -np.abs(draws["mu"][:, None] - np.array([0.0, 1.0])[None, :])


def test_draws_accumulate_across_checkpoints_unless_fresh(tmp_path):
    trace = TraceWriter(tmp_path / "trace.csv", identity={"seed": 0})
    mean = PosteriorMean(tmp_path / "posterior_mean.npz")
    scores = RunningLogMeanExp()
    first, second = {"mu": np.array([0.0, 2.0])}, {"mu": np.array([4.0])}
    common = {"scores": scores, "log_likelihood": log_likelihood, "trace": trace,
              "posterior_mean": mean}
    record_checkpoint(first, iteration=10, wall_s=1.0, phase="sampling", fresh=True,
                      columns={"phase": "sampling"}, **common)
    lpd = record_checkpoint(second, iteration=20, wall_s=2.0, phase="sampling", fresh=False,
                            columns={"phase": "sampling"}, **common)
    assert lpd == pytest.approx(heldout_lpd(log_likelihood({"mu": np.array([0.0, 2.0, 4.0])})))
    saved = read_posterior_mean(mean.path)
    assert saved["mu"] == pytest.approx(2.0) and saved["num_draws"] == 3
    assert str(saved["phase"]) == "sampling" and saved["iteration"] == 20
    rows = pd.read_csv(trace.path)
    assert list(rows.columns) == ["seed", "iteration", "wall_s", "heldout_lpd", "num_draws",
                                  "phase"]
    assert list(rows["num_draws"]) == [2, 3] and rows["heldout_lpd"].iloc[-1] == pytest.approx(lpd)
    record_checkpoint(second, iteration=30, wall_s=3.0, phase="warmup", fresh=True,
                      columns={"phase": "warmup"}, **{**common, "scores": RunningLogMeanExp()})
    assert read_posterior_mean(mean.path)["mu"] == pytest.approx(4.0)
