"""RGB colour histograms of image files and their standardisation."""

import numpy as np
import pytest
from PIL import Image

from advi_repro.planning.datasets import images


def test_rgb_histograms_of_generated_images(tmp_path):
    rng = np.random.default_rng(0)
    Image.new("RGB", (8, 5), (255, 0, 128)).save(tmp_path / "a_solid.png")
    noisy = rng.integers(0, 256, size=(16, 12, 3), dtype=np.uint8)
    Image.fromarray(noisy).save(tmp_path / "b_noise.PNG")
    Image.fromarray(noisy[..., 0]).save(tmp_path / "c_grey.png")
    Image.fromarray(noisy).save(tmp_path / "d_photo.jpg", quality=95)
    (tmp_path / "notes.txt").write_text("not an image")

    features = images.rgb_histograms(tmp_path)
    assert features.shape == (4, 576) and features.dtype == np.float32
    blocks = features.reshape(4, 3, 192)
    np.testing.assert_allclose(blocks.sum(axis=-1), 1.0, rtol=1e-6)
    solid = blocks[0]
    assert solid[0, 191] == 1.0 and solid[1, 0] == 1.0 and solid[2, 96] == 1.0
    red_bins = noisy[..., 0].ravel().astype(int) * 192 // 256
    expected_red = np.bincount(red_bins, minlength=192) / red_bins.size
    np.testing.assert_allclose(blocks[1, 0], expected_red, rtol=1e-6)
    np.testing.assert_array_equal(blocks[2, 0], blocks[2, 1])  # grey: R = G = B


def test_rgb_histograms_of_an_empty_folder_names_it(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path)):
        images.rgb_histograms(tmp_path)


def test_standardise_uses_the_training_rows():
    rng = np.random.default_rng(1)
    features = rng.normal(3.0, 2.0, size=(50, 4))
    features[:, 3] = 7.0
    out = images.standardise(features, num_train=40)
    np.testing.assert_allclose(out[:40, :3].mean(axis=0), 0.0, atol=1e-6)
    np.testing.assert_allclose(out[:40, :3].std(axis=0), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(out[:, 3], 0.0)
    assert out.dtype == np.float32


def test_a_missing_image_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"image folder .*no_images does not exist"):
        images.rgb_histograms(tmp_path / "no_images")


def test_an_unreadable_image_is_named(tmp_path):
    Image.new("RGB", (4, 4), (1, 2, 3)).save(tmp_path / "a_good.png")
    (tmp_path / "b_broken.png").write_bytes(b"not a png at all")
    with pytest.raises(ValueError, match=r"cannot read image .*b_broken\.png"):
        images.rgb_histograms(tmp_path)


def test_dequantised_histograms_are_the_counts_plus_uniform_noise_renormalised():
    rng = np.random.default_rng(5)
    batch = rng.integers(0, 256, size=(6, 10, 3), dtype=np.uint8)  # 10 pixels, many empty bins
    exact = images.batch_histograms(batch, num_bins=16)
    dequantised = images.batch_histograms(batch, num_bins=16, rng=images.dequantisation_rng(3))
    noise = images.dequantisation_rng(3).uniform(size=(6, 3, 16))
    counts = exact.reshape(6, 3, 16).astype(np.float64) * 10 + noise
    np.testing.assert_allclose(dequantised.reshape(6, 3, 16),
                               counts / counts.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(dequantised.reshape(6, 3, 16).sum(-1), 1.0, rtol=1e-6)
    # no two images share a value in a bin any more (the empty bins were all exactly 0)
    assert (exact == 0).sum() > 100
    assert all(np.unique(column).size == 6 for column in dequantised.T)
