"""Figure 3 is rendered from a real ADVI fit whose q matches the KL-optimal log-normal."""

import importlib.util
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "plot_transformations.py"


def test_figure3_is_drawn_from_a_fit_at_the_kl_optimum(tmp_path):
    spec = importlib.util.spec_from_file_location("plot_transformations", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "fig3_transformations.png"
    fit = module.render(out, seed=0)
    assert out.stat().st_size > 10_000 and out.with_suffix(".pdf").stat().st_size > 5_000
    a, b = fit["a"], fit["b"]
    assert fit["mu"] == pytest.approx(math.log(a / b) - 0.5 / a, abs=0.1)
    assert fit["sigma"] == pytest.approx(math.sqrt(1 / a), rel=0.25)
