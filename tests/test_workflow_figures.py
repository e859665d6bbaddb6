"""The figure scripts of the workflow that draw a fit rather than a trace (Figures 5c, 5d)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from advi_repro.planning.paths import REPO_ROOT
from advi_repro.runners.posterior import PosteriorMean

SCRIPT = REPO_ROOT / "scripts" / "plot_factors.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # advi_repro: installed
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


# ---- the accuracy figures (scripts/plot_accuracy.py, analysis/figures.py) ----------------------

import pandas as pd  # noqa: E402

from advi_repro.analysis.figures import fill_title, split_off_axis, time_ticks  # noqa: E402
from advi_repro.analysis.summary import final_rows, mean_curves  # noqa: E402

plot_accuracy = pytest.importorskip("plot_accuracy")


def labelled_x_ticks(ax):
    """The major x tick labels drawn inside the axis range."""
    low, high = ax.get_xlim()
    return [t.get_text() for t, v in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)
            if low <= v <= high and t.get_text()]


def legend_overlaps_data(fig, ax):
    """Whether any line, drawn as its points and the segments between them, passes through
    the legend's box (display units)."""
    fig.canvas.draw()
    legend = fig.legends[0] if fig.legends else ax.get_legend()
    box = legend.get_window_extent()
    for line in ax.get_lines():
        points = line.get_transform().transform(line.get_xydata())
        if len(points) > 1:  # 50 points along each segment
            t = np.linspace(0, 1, 50)[:, None, None]
            points = (points[:-1] * (1 - t) + points[1:] * t).reshape(-1, 2)
        x, y = points.T if len(points) else ([], [])
        x, y = np.asarray(x), np.asarray(y)
        if ((box.x0 <= x) & (x <= box.x1) & (box.y0 <= y) & (y <= box.y1)).any():
            return True
    return False


def assert_readable(fig, title_part):
    """The properties every accuracy figure must have: >= 3 labelled time ticks,
    a legend off the data, a title naming the data used."""
    ax = fig.axes[0]
    assert len(labelled_x_ticks(ax)) >= 3, labelled_x_ticks(ax)
    assert not legend_overlaps_data(fig, ax)
    assert title_part in ax.get_title()


def trace(method, label, seconds, lpd, seed=0):
    return pd.DataFrame({"experiment": "e", "method": method, "label": label, "seed": seed,
                         "iteration": range(1, len(seconds) + 1), "wall_s": seconds,
                         "heldout_lpd": lpd})


@pytest.mark.parametrize(("low", "high"), [(0.3, 0.9), (1.2, 8.5), (0.05, 300), (2.0, 2.9),
                                           (4.0, 4.2)])
def test_a_time_axis_gets_at_least_three_ticks_inside_its_range(low, high):
    ticks = time_ticks(low, high)
    assert len(ticks) >= 3 and all(low <= t <= high for t in ticks)
    assert ticks == sorted(set(ticks))


def test_decades_are_kept_when_they_give_three_ticks():
    assert time_ticks(0.05, 300) == [0.1, 1.0, 10.0, 100.0]
    assert time_ticks(1.2, 8.5) == [2.0, 3.0, 5.0, 7.0]  # 1-2-5 gives two only


def test_a_bad_time_range_is_refused_with_its_numbers():
    with pytest.raises(ValueError, match=r"\[0, 5\]"):
        time_ticks(0, 5)


def test_a_method_far_below_the_rest_is_left_off_the_axis():
    traces = pd.concat([trace("advi", "ADVI", [1, 2, 4], [-6.0, -5.0, -4.8]),
                        trace("nuts", "NUTS", [3, 30, 300], [-5.2, -4.6, -4.5]),
                        trace("hmc", "HMC", [50, 100], [-36.0, -35.7])])
    on, below, above = split_off_axis(mean_curves(traces), final_rows(traces))
    assert on == ["advi", "nuts"] and below == ["hmc"] and above == []


def test_a_degenerate_method_far_above_the_rest_is_left_off_the_axis_too():
    # E5 on histogram data: a fit whose held-out density grows without bound
    traces = pd.concat([trace("advi", "ADVI", [1, 2, 4], [-900.0, -700.0, -655.8]),
                        trace("robust", "ADVI robust", [1, 2], [-485.0, 156179.0]),
                        trace("nuts", "NUTS", [3, 30, 300], [-900.0, -840.0, -831.7]),
                        trace("hmc", "HMC", [50, 100], [-4300.0, -4298.0])])
    on, below, above = split_off_axis(mean_curves(traces), final_rows(traces))
    assert on == ["advi", "nuts"] and below == ["hmc"] and above == ["robust"]


def test_a_method_that_rises_above_the_rest_and_falls_back_stays_on_the_axis():
    # E4 at smoke scale: robust ADVI's held-out score falls as it overfits 2 s of tiny data
    traces = pd.concat([trace("advi", "ADVI", [1, 2, 3], [-6.47, -6.3, -6.26]),
                        trace("robust", "ADVI robust", [0.6, 1.7, 3.4], [-4.66, -5.36, -10.73]),
                        trace("nuts", "NUTS", [6], [-485.1]),
                        trace("hmc", "HMC", [0.7], [-561.4])])
    on, below, above = split_off_axis(mean_curves(traces), final_rows(traces))
    assert on == ["advi", "robust"] and sorted(below) == ["hmc", "nuts"] and above == []


def test_two_methods_far_below_two_others_leave_the_axis_to_the_better_pair():
    # Figure 5b at smoke scale: ADVI's two lines against a stuck NUTS and static HMC
    traces = pd.concat([trace("advi", "ADVI", [1, 3], [-6.5, -5.68]),
                        trace("robust", "ADVI robust", [3], [-4.63]),
                        trace("nuts", "NUTS", [6], [-489.2]),
                        trace("hmc", "HMC", [0.7], [-561.4])])
    on, below, above = split_off_axis(mean_curves(traces), final_rows(traces))
    assert on == ["advi", "robust"] and sorted(below) == ["hmc", "nuts"] and above == []


def test_close_methods_all_stay_on_the_axis():
    traces = pd.concat([trace("advi", "ADVI", [1, 2], [-0.70, -0.636]),
                        trace("nuts", "NUTS", [3, 60], [-0.9, -0.638])])
    assert split_off_axis(mean_curves(traces), final_rows(traces)) == (["advi", "nuts"], [], [])


def test_a_title_gets_the_data_sizes_the_runs_recorded():
    infos = [{"data": {"n_train": 2000, "n_heldout": 200, "path": "x"}}]
    assert fill_title("Full dataset of {n_train} images", infos) == "Full dataset of 2,000 images"
    assert fill_title("Linear Regression with ARD", infos) == "Linear Regression with ARD"
    with pytest.raises(ValueError, match=r"no \['num_frames'\].*'n_heldout', 'n_train'"):
        fill_title("{num_frames} frames", infos)


def test_hmc_far_below_is_printed_and_advi_against_nuts_fills_the_axis():
    traces = pd.concat([trace("advi_M1", "ADVI (M=1)", [0.5, 1, 2, 4], [-9, -6.0, -5.0, -4.8]),
                        trace("nuts", "NUTS", [3, 30, 300], [-5.2, -4.6, -4.5]),
                        trace("hmc", "HMC", [50, 100], [-36.0, -35.7])])
    fig = plot_accuracy.plot(traces, title="Gamma Poisson", methods=["advi_M1", "nuts", "hmc"])
    ax = fig.axes[0]
    bottom, top = ax.get_ylim()
    assert bottom > -7 and top > -4.5  # ADVI's -4.8 and NUTS's -4.5 apart, HMC off the axis
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "HMC (final -35.7, below the axis)" in labels
    assert_readable(fig, "Gamma Poisson")


def test_the_legend_check_sees_a_legend_over_the_data():
    traces = trace("advi", "ADVI", [1, 2, 4, 8], [-2.0, -1.5, -1.2, -1.1])
    fig = plot_accuracy.plot(traces, title="t", methods=[])
    fig.legends.clear()
    ax = fig.axes[0]
    ax.legend(loc="center", bbox_to_anchor=(3, -1.3), bbox_transform=ax.transData)  # on the line
    assert legend_overlaps_data(fig, ax)


def test_a_curve_inside_one_decade_gets_labelled_ticks():
    traces = pd.concat([trace(f"advi_B{b}", f"B={b}", [1.5 + i, 2.5 + i, 3.3 + i],
                              [-820, -818.5, -818.2]) for i, b in enumerate((50, 100, 500))])
    fig = plot_accuracy.plot(traces, title="Full dataset of 2,000 images", methods=[])
    assert_readable(fig, "2,000 images")


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

    from advi_repro import models

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
