"""The E5/E6 colour histograms: the simulated stand-in, or real images (data.image_dir),
made by the workflow's rule script into one .npy layout that ``advi_repro.models.gmm.load``
reads."""

import json
import logging
import runpy
from types import SimpleNamespace

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from PIL import Image

from advi_repro.models import gmm
from advi_repro.planning.config import register, to_run
from advi_repro.planning.data import data_path, describe_data, imageclef_features, prepare_data
from advi_repro.planning.datasets import images
from advi_repro.planning.paths import REPO_ROOT, checkout_conf
from advi_repro.planning.workflow import plan_workflow
from advi_repro.runners.run import execute

CONF_DIR = checkout_conf(__file__)  # this checkout's conf/

NUM_IMAGES, NUM_HELDOUT = 12, 4


@pytest.fixture
def image_dir(tmp_path):
    """A handful of generated PNG files: random sizes and colour casts."""
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for n in range(NUM_IMAGES):
        height, width = rng.integers(8, 24, size=2)
        cast = rng.integers(0, 128, size=3)
        pixels = (cast + rng.integers(0, 128, size=(height, width, 3))).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"img{n:02d}.png")
    return folder


def compose_run(*overrides):
    register(CONF_DIR)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", list(overrides))
    return to_run(cfg), cfg


def test_the_rule_script_writes_standardised_histograms_of_the_images(tmp_path, image_dir):
    out = tmp_path / "results" / "data" / "imageclef" / "features.npy"
    plan = plan_workflow(experiments=["gmm"], scale="smoke", seeds=[0],
                         overrides=[f"data.image_dir={image_dir}",
                                    f"experiment.scales.smoke.load.n_heldout={NUM_HELDOUT}"],
                         conf_dir=CONF_DIR)
    (job,) = plan.data.values()
    assert (job.image_dir, job.num_heldout) == (str(image_dir), NUM_HELDOUT)
    snakemake = SimpleNamespace(params=SimpleNamespace(job=job), output=[str(out)],
                                log=[str(tmp_path / "features.log")])
    runpy.run_path(str(REPO_ROOT / "scripts" / "imageclef_features.py"),
                   init_globals={"snakemake": snakemake})
    logging.getLogger().handlers.clear()  # the script's basicConfig
    features = np.load(out, mmap_mode="r")
    assert features.shape == (NUM_IMAGES, 576) and features.dtype == np.float32
    # rows in file-name order, each channel sums to 1, dequantised with the data seed's noise
    raw = images.rgb_histograms(image_dir, rng=images.dequantisation_rng(0))
    train = raw[: NUM_IMAGES - NUM_HELDOUT]
    spread = train.std(axis=0) > 0
    np.testing.assert_allclose(features[:, spread],
                               ((raw - train.mean(axis=0)) / np.where(spread, train.std(axis=0),
                                                                      1.0))[:, spread],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(features[: NUM_IMAGES - NUM_HELDOUT, spread].mean(axis=0), 0.0,
                               atol=1e-5)
    problem = gmm.load(out, seed=0, n_train=NUM_IMAGES - NUM_HELDOUT, n_heldout=NUM_HELDOUT)
    np.testing.assert_array_equal(problem.heldout["x"], features[-NUM_HELDOUT:])
    assert problem.train["x"].shape == (NUM_IMAGES - NUM_HELDOUT, 576)


def test_too_few_images_for_the_held_out_rows_fail_naming_the_folder(tmp_path, image_dir):
    with pytest.raises(ValueError, match=f"{image_dir} holds {NUM_IMAGES} images"):
        imageclef_features(tmp_path / "f.npy", simulator="gmm_standin", seed=0, kwargs={},
                           image_dir=image_dir, num_heldout=NUM_IMAGES - 1)
    assert not (tmp_path / "f.npy").exists()


def test_without_images_the_same_layout_is_simulated_once_for_e5_and_e6(tmp_path):
    paths = set()
    for experiment in ("gmm", "gmm_minibatch"):
        run, _ = compose_run(f"experiment={experiment}", "scale=smoke",
                             f"results_dir={tmp_path}")
        paths.add(data_path(run))
        assert "simulated stand-in" in describe_data(run)
    (path,) = paths
    assert path.name == "image_standin_seed0_num_bins8_num_heldout200_num_train2000.npy"
    assert "procedural colour images" in describe_data(run)
    prepare_data(run)
    data = np.load(path, mmap_mode="r")
    assert data.shape == (2200, 3 * 8) and data.dtype == np.float32  # smoke: 8 bins
    np.testing.assert_allclose(data[:2000].mean(axis=0), 0.0, atol=1e-4)  # standardised
    sd = data[:2000].std(axis=0)
    filled = sd > 0  # a bin no training image fills is only centred
    assert filled.mean() > 0.95
    np.testing.assert_allclose(sd[filled], 1.0, rtol=1e-3)


def test_a_run_on_real_images_records_them(tmp_path, image_dir):
    run, cfg = compose_run(
        "experiment=gmm", "scale=smoke", "method=advi", "method.max_iter=200",
        "method.checkpoint_every=100", "method.eval_draws=20", f"results_dir={tmp_path}",
        f"data.image_dir={image_dir}", "experiment.scales.smoke.load.n_train=8",
        f"experiment.scales.smoke.load.n_heldout={NUM_HELDOUT}")
    assert "real images" in describe_data(run) and str(image_dir) in describe_data(run)
    out = execute(run, OmegaConf.to_container(cfg, resolve=True))
    info = json.loads((out / "info.json").read_text())
    assert info["data"]["image_dir"] == str(image_dir) and info["data"]["dim"] == 576
    assert info["data"]["description"] == describe_data(run)  # what the report says
    assert info["data"]["path"].endswith(f"_heldout{NUM_HELDOUT}.npy")
    assert np.isfinite(info["final_heldout_lpd"])


def test_a_run_handed_its_data_and_folder_uses_them_and_makes_no_data(tmp_path):
    from advi_repro.models import linreg_ard

    data = tmp_path / "given" / "linreg.npz"
    data.parent.mkdir()
    np.savez(data, **linreg_ard.simulate(0, num_train=50, num_heldout=20, num_features=3))
    folder = tmp_path / "elsewhere" / "run"
    run, cfg = compose_run("experiment=linreg_ard", "scale=smoke", "method=advi",
                           f"results_dir={tmp_path / 'results'}", f"input_data={data}",
                           f"output_dir={folder}", "method.max_iter=200")
    out = execute(run, OmegaConf.to_container(cfg, resolve=True))
    assert out == folder and (folder / "trace.csv").is_file()
    info = json.loads((folder / "info.json").read_text())
    assert info["data"]["path"] == str(data) and info["data"]["n_train"] == 50
    assert not (tmp_path / "results" / "data").exists()  # the data rules' job, not the run's
    assert not (tmp_path / "results" / "runs").exists()
