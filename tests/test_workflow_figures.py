"""The figure scripts of the workflow that draw a fit rather than a trace (Figures 5c, 5d)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from runners.paths import REPO_ROOT
from runners.posterior import PosteriorMean

SCRIPT = REPO_ROOT / "scripts" / "plot_factors.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # the repo's packages, installed or not
sys.path.insert(0, str(SCRIPT.parent))
import plot_factors  # noqa: E402


def test_each_factor_is_its_column_reshaped_row_major():
    beta = np.arange(560 * 3, dtype=float).reshape(560, 3)
    images = plot_factors.factor_images(beta, (28, 20))
    assert images.shape == (3, 28, 20)
    assert images[1, 0, 1] == beta[1, 1] and images[2, 1, 0] == beta[20, 2]


def test_a_shape_that_does_not_fit_the_factors_is_refused():
    with pytest.raises(ValueError, match=r"cannot be drawn as 28 x 21"):
        plot_factors.factor_images(np.ones((560, 10)), (28, 21))


def test_the_script_draws_a_posterior_mean_file_to_png_and_pdf(tmp_path):
    mean = PosteriorMean(tmp_path / "posterior_mean.npz")
    rng = np.random.default_rng(0)
    mean.update({"beta": rng.gamma(1.0, size=(4, 560, 10)), "theta": rng.gamma(1.0, size=(4, 7))})
    mean.write(iteration=100, phase="advi")
    out = tmp_path / "fig5c.png"
    result = subprocess.run([sys.executable, str(SCRIPT), str(mean.path), str(out), "--title",
                             "Gamma Poisson Factors"], capture_output=True, text=True,
                            timeout=120, env=ENV)
    assert result.returncode == 0, result.stderr
    with Image.open(out) as image:
        assert image.width > image.height > 200  # two rows of five portrait images
    assert out.with_suffix(".pdf").stat().st_size > 1000
    missing = subprocess.run([sys.executable, str(SCRIPT), str(mean.path), str(out), "--site",
                              "gamma"], capture_output=True, text=True, timeout=120,
                             env=ENV)
    assert missing.returncode != 0 and "has no site 'gamma'" in missing.stderr
