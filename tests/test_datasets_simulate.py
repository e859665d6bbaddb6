"""Simulated data: the streamed, standardised imageCLEF stand-ins (Gaussian mixture;
procedural images through the real-image path)."""

import numpy as np
import pytest
from PIL import Image

from advi_repro.models import gmm
from advi_repro.planning.datasets import images, procedural, simulate


def standin(tmp_path, seed, name="standin.npy"):
    return simulate.gmm_standin(seed, num_train=500, num_heldout=70, dim=6, num_components=3,
                                out_path=tmp_path / name)


def test_gmm_standin_is_standardised_over_training_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(simulate, "BLOCK_ROWS", 64)  # several blocks, one across the split
    path = standin(tmp_path, 0)
    data = np.load(path)
    assert data.shape == (570, 6) and data.dtype == np.float32
    np.testing.assert_allclose(data[:500].mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(data[:500].std(axis=0), 1.0, rtol=1e-5)
    assert abs(data[500:].mean()) < 0.5
    assert [p.name for p in tmp_path.iterdir()] == ["standin.npy"]


def test_gmm_standin_is_seeded_and_loads_as_gmm_data(tmp_path):
    first = np.load(standin(tmp_path, 1, "a.npy"))
    again = np.load(standin(tmp_path, 1, "b.npy"))
    other = np.load(standin(tmp_path, 2, "c.npy"))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    problem = gmm.load(tmp_path / "a.npy", seed=0, n_train=500, n_heldout=70)
    np.testing.assert_array_equal(problem.heldout["x"], first[500:])


def test_gmm_standin_has_several_unequal_components(tmp_path):
    data = np.load(standin(tmp_path, 5))
    # a mixture of separated components is multi-modal: far from Gaussian in some dimension
    excess_kurtosis = ((data**4).mean(axis=0) - 3.0)
    assert np.abs(excess_kurtosis).max() > 0.2


def test_write_standardised_refuses_blocks_that_do_not_make_the_file(tmp_path):
    blocks = [np.ones((3, 4), np.float32), np.ones((3, 5), np.float32)]
    with pytest.raises(ValueError, match=r"a block of shape \(3, 5\) after 3 rows"):
        simulate.write_standardised(iter(blocks), tmp_path / "x.npy", num_rows=6, dim=4,
                                    num_train=4)
    with pytest.raises(ValueError, match="made 3 rows, expected 6"):
        simulate.write_standardised(iter(blocks[:1]), tmp_path / "x.npy", num_rows=6, dim=4,
                                    num_train=4)
    assert list(tmp_path.iterdir()) == []


def test_image_standin_is_the_real_image_path_applied_to_procedural_images(tmp_path):
    """Writing the generated images as PNG files and reading them as a user's images
    (data.image_dir) gives the stand-in's file exactly: same histograms, same scaling."""
    num_train, num_heldout = 150, 30
    path = simulate.image_standin(4, num_train=num_train, num_heldout=num_heldout,
                                  out_path=tmp_path / "standin.npy")
    folder = tmp_path / "images"
    folder.mkdir()
    (batch,) = procedural.image_batches(4, num_train + num_heldout)
    for i, image in enumerate(batch):
        Image.fromarray(image).save(folder / f"img{i:04d}.png")
    dequantised = images.rgb_histograms(folder, rng=images.dequantisation_rng(4))
    expected = images.standardise(dequantised, num_train=num_train)
    data = np.load(path)
    assert data.shape == (180, 576) and data.dtype == np.float32
    np.testing.assert_allclose(data, expected, atol=2e-4)


def test_image_standin_is_seeded_and_unlike_a_gaussian_mixture(tmp_path):
    first = np.load(simulate.image_standin(1, num_train=400, num_heldout=10,
                                           out_path=tmp_path / "a.npy"))
    again = np.load(simulate.image_standin(1, num_train=400, num_heldout=10,
                                           out_path=tmp_path / "b.npy"))
    other = np.load(simulate.image_standin(2, num_train=400, num_heldout=10,
                                           out_path=tmp_path / "c.npy"))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # histograms are sparse and skewed: in most bins many images are at the floor (below
    # one pixel before standardisation: dequantised zeros) and a few far above it
    skewness = (first[:400] ** 3).mean(axis=0)
    assert np.median(skewness) > 1.0
    low, high = first[:400].min(axis=0), first[:400].max(axis=0)
    at_floor = (first[:400] - low <= 0.05 * (high - low)).mean(axis=0)
    assert np.median(at_floor) > 0.3  # Gaussian draws: 0.005 in the lowest 5% of the range
