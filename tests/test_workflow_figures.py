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


def test_the_top_frames_are_those_with_the_largest_loadings_on_each_factor():
    theta = np.array([[0.1, 5.0], [3.0, 0.2], [2.0, 4.0]])
    np.testing.assert_array_equal(plot_factors.top_loading_frames(theta, 2), [[1, 2], [0, 2]])
    with pytest.raises(ValueError, match="top 4 frames of loadings of shape"):
        plot_factors.top_loading_frames(theta, 4)


def test_the_script_draws_each_factor_beside_its_top_frames(tmp_path):
    mean = PosteriorMean(tmp_path / "posterior_mean.npz")
    rng = np.random.default_rng(0)
    mean.update({"beta": rng.gamma(1.0, size=(4, 560, 10)),
                 "theta": rng.gamma(1.0, size=(4, 7, 10))})
    mean.write(iteration=100, phase="advi")
    np.save(tmp_path / "frames.npy", rng.integers(0, 256, (9, 560), dtype=np.uint8))
    out = tmp_path / "fig5c.png"
    result = subprocess.run([sys.executable, str(SCRIPT), str(mean.path), str(out), "--frames",
                             str(tmp_path / "frames.npy"), "--top-frames", "3"],
                            capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 0, result.stderr
    with Image.open(out) as image:
        assert image.height > 2 * image.width  # ten rows of a factor and three frames


def test_sparsity_is_the_share_of_a_factor_in_its_brightest_pixels():
    import plot_factor_settings

    factors = np.ones((100, 2))
    factors[:5, 1] = 100.0  # factor 2: nearly all its mass in 5 of 100 pixels
    np.testing.assert_allclose(plot_factor_settings.top_mass(factors), [0.05, 500 / 595])


def test_the_map_of_a_factorisation_raises_its_log_joint(tmp_path):
    import map_factors

    import models

    rng = np.random.default_rng(0)
    np.save(tmp_path / "frames.npy", rng.poisson(50.0, (12, 560)).astype(np.uint8))
    problem = models.get("dirichlet_exponential_nmf").load(tmp_path / "frames.npy", seed=0)
    args = {"K": 3, "alpha0": 1000.0, "lambda0": 0.1}
    fits = [map_factors.fit_map(problem, "dirichlet_exponential_nmf", args, steps=steps,
                                learning_rate=0.05, seed=0) for steps in (1, 100)]
    (_, _, start), (theta, beta, end) = fits
    assert end > start + 1.0  # nats per training entry
    assert theta.shape == (12, 3) and beta.shape == (560, 3) and (beta > 0).all()
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-5)
