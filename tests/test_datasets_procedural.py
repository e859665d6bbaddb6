"""Procedural images: seeded, varied in size and colour (near-grey and saturated shares)."""

import numpy as np
import pytest

from advi_repro.planning.datasets import procedural


def test_batches_are_seeded_uint8_images_of_varying_sizes():
    batches = list(procedural.image_batches(0, 100, batch=16))
    assert [len(b) for b in batches] == [16] * 6 + [4]
    assert all(b.dtype == np.uint8 and b.ndim == 4 and b.shape[-1] == 3 for b in batches)
    sizes = {b.shape[1:3] for b in batches}
    low, high = procedural.SIZE_RANGE
    assert len(sizes) > 2 and all(low <= s <= high for size in sizes for s in size)
    again = list(procedural.image_batches(0, 100, batch=16))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    assert not np.array_equal(batches[0], next(procedural.image_batches(1, 100, batch=16)))


def test_a_share_of_images_is_near_grey_and_a_share_saturated():
    (batch,) = procedural.image_batches(3, 400, batch=400)
    pixels = batch.reshape(400, -1, 3).astype(float)
    chroma = (pixels.max(axis=-1) - pixels.min(axis=-1)).mean(axis=1)  # per image, 0..255
    grey, vivid = (chroma < 20).mean(), (chroma > 120).mean()
    assert 0.5 * procedural.GREY_SHARE < grey < 2 * procedural.GREY_SHARE
    assert vivid > 0.05
    # the images are not flat: pixel values spread within an image
    assert np.median(pixels.std(axis=1).mean(axis=1)) > 10


@pytest.mark.parametrize("num_images", [0, 2.5])
def test_a_bad_count_is_refused_naming_it(num_images):
    with pytest.raises(ValueError, match=f"num_images must be an integer >= 1, got {num_images}"):
        next(procedural.image_batches(0, num_images))


def test_histograms_take_any_bin_count_and_refuse_a_bad_one():
    from advi_repro.planning.datasets import images

    (batch,) = procedural.image_batches(0, 5)
    coarse, fine = images.batch_histograms(batch, num_bins=8), images.batch_histograms(batch)
    assert coarse.shape == (5, 24) and fine.shape == (5, 576)
    # 8 bins are sums of 24 consecutive of the 192
    np.testing.assert_allclose(coarse, fine.reshape(5, 24, 24).sum(axis=-1), atol=1e-6)
    with pytest.raises(ValueError, match="num_bins must be an integer in 1..256, got 300"):
        images.batch_histograms(batch, num_bins=300)
