"""The Hydra config: every experiment composes, typos and bad values fail before a run."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from advi_repro.planning.config import register, to_run
from advi_repro.planning.data import data_path
from advi_repro.planning.methods import AdviConfig, HmcConfig, NutsConfig
from advi_repro.planning.paths import REPO_ROOT, checkout_conf
from advi_repro.planning.sweeps import expand_sweeps, refuse_shared_folders
from advi_repro.planning.workflow import experiment_names, plan_workflow

CONF_DIR = checkout_conf(__file__)  # this checkout's conf/
EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
SCALES = sorted(p.stem for p in (CONF_DIR / "scale").glob("*.yaml"))


@pytest.fixture
def compose_run():
    register(CONF_DIR)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        yield lambda *overrides: to_run(compose("config", list(overrides)))


def test_the_default_run_is_the_paper_scale_linreg_with_advi(compose_run):
    run = compose_run()
    assert (run.experiment.name, run.scale.name, run.method.run_name()) == (
        "linreg_ard", "paper", "advi_M1")
    assert run.budget_s == run.experiment.scales["paper"].budget_s
    assert run.method.eval_draws == run.scale.eval_draws == 1000


@pytest.mark.parametrize("experiment", EXPERIMENTS)
@pytest.mark.parametrize("scale", SCALES)
def test_every_experiment_composes_at_every_scale_with_each_of_its_methods(
    compose_run, experiment, scale
):
    base = compose_run(f"experiment={experiment}", f"scale={scale}")
    names = []
    for method in (one for listed in base.experiment.methods for one in expand_sweeps(listed)):
        run = compose_run(f"experiment={experiment}", f"scale={scale}", *method)
        assert isinstance(run.method, AdviConfig | NutsConfig | HmcConfig)
        names.append(run.method.run_name())
    assert len(set(names)) == len(names)


def test_mcmc_defaults_are_stans_and_smoke_shrinks_the_chains(compose_run):
    nuts = compose_run("method=nuts").method
    assert (nuts.num_warmup, nuts.num_samples, nuts.target_accept_prob, nuts.dense_mass,
            nuts.max_tree_depth) == (1000, 1000, 0.8, False, 10)
    assert compose_run("method=hmc", "scale=smoke").method.num_warmup == 50


def test_method_names_and_labels_record_what_a_sweep_varies(compose_run):
    run = compose_run("method.grad_samples=10", "method.minibatch_size=500")
    assert run.method.run_name() == "advi_M10_B500"
    assert run.method.label() == "ADVI (M=10, B=500)"
    assert compose_run("method.family=fullrank").method.run_name() == "advi_fullrank_M1"
    assert compose_run("method=nuts").method.label() == "NUTS"
    hmc = compose_run("method=hmc", "method.init=advi").method
    assert (hmc.run_name(), hmc.label()) == ("hmc_init-advi", "HMC (from ADVI)")
    dense = compose_run("method=nuts", "method.dense_mass=true").method
    assert (dense.run_name(), dense.label()) == ("nuts_dense", "NUTS (dense)")


@pytest.mark.parametrize("override", ["method.grad_sample=10", "experiment.budget=3", "seeds=1"])
def test_unknown_keys_fail_at_composition_naming_the_key(compose_run, override):
    with pytest.raises(ConfigCompositionException, match=override.split("=")[0]):
        compose_run(override)


def test_wrongly_typed_values_fail_at_composition(compose_run):
    with pytest.raises(ConfigCompositionException, match="grad_samples"):
        compose_run("method.grad_samples=ten")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["budget_s=-5"], r"budget_s = -5\.0"),
        (["method.grad_samples=0"], r"grad_samples = 0"),
        (["method=nuts", "method.target_accept_prob=1.5"], r"target_accept_prob = 1\.5"),
        (["experiment.scales.paper.budget_s=0"], r"budget_s = 0\.0"),
        (["experiment.data.source=download"], r"source = 'download'"),
        (["method=hmc", "method.init=map"], r"init = 'map'"),
    ],
)
def test_out_of_range_values_fail_naming_the_value(compose_run, overrides, message):
    with pytest.raises(ValueError, match=message):
        compose_run(*overrides)


def test_an_experiment_without_settings_for_the_scale_says_so(compose_run):
    with pytest.raises(KeyError, match="no settings for scale"):
        compose_run("~experiment.scales.smoke", "scale=smoke", "budget_s=1")


def test_fit_fails_before_running_anything_with_a_message_naming_the_value(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "fit.py"), "method.grad_samples=0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},  # advi_repro: installed
    )
    assert result.returncode != 0
    assert "AdviConfig.grad_samples = 0: must be an integer >= 1" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no data, no results


def test_sweeps_expand_as_multirun_does():
    assert expand_sweeps(["method=advi", "method.grad_samples=1,10", "seed=0,1"]) == [
        ["method=advi", "method.grad_samples=1", "seed=0"],
        ["method=advi", "method.grad_samples=1", "seed=1"],
        ["method=advi", "method.grad_samples=10", "seed=0"],
        ["method=advi", "method.grad_samples=10", "seed=1"],
    ]
    assert expand_sweeps([]) == [[]]
    assert expand_sweeps(["seed=range(0,2)", "+extra=1"]) == [["seed=0", "+extra=1"],
                                                              ["seed=1", "+extra=1"]]
    with pytest.raises(ValueError, match=r"'budget_s=interval\(1,2\)': an interval cannot"):
        expand_sweeps(["budget_s=interval(1,2)"])


def test_the_workflow_plan_runs_each_experiments_methods_for_each_seed():
    plan = plan_workflow(experiments=["linreg_ard", "election88"], scale="smoke", seeds=[0, 1],
                         overrides=[], conf_dir=CONF_DIR)
    linreg, election = plan.experiments
    assert linreg.methods == ["advi_M1", "advi_M10", "advi_robust_M1", "nuts", "hmc",
                              "hmc_init-advi"]
    assert len(plan.runs) == 22
    assert linreg.runs[0].overrides == (
        "experiment=linreg_ard", "scale=smoke", "method=advi", "method.grad_samples=1", "seed=0")
    assert linreg.runs[0].trace == "results/runs/smoke/linreg_ard/advi_M1/seed0/trace.csv"
    assert {job.source for job in plan.data.values()} == {"simulate", "fetch"}
    assert election.runs[0].data == "results/data/fetched/election88"


def test_a_workflow_override_that_picks_the_method_replaces_the_methods_list():
    plan = plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                         overrides=["method=advi", "method.minibatch_size=50,100"],
                         conf_dir=CONF_DIR)
    assert plan.experiments[0].methods == ["advi_M1_B50", "advi_M1_B100"]


def test_a_sweep_over_a_setting_the_name_does_not_record_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"would write results/runs/smoke/linreg_ard/advi_M1/"
                       r"seed0: .* they differ in method\.tol_rel_obj \(0\.1 / 0\.01\)"):
        plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                      overrides=["method=advi", "method.tol_rel_obj=0.1,0.01"], conf_dir=CONF_DIR)


def test_a_sweep_that_repeats_the_experiments_own_settings_is_refused_saying_so():
    # E1's method list has M = 1 and M = 10: sweeping M again makes each run twice
    with pytest.raises(ValueError, match=r"advi_M1/seed0: .* they are the same run: a later "
                       r"override sets a key an earlier one set"):
        plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                      overrides=["method.grad_samples=1,10"], conf_dir=CONF_DIR)


def test_runs_of_different_scales_never_share_a_folder(compose_run):
    smoke, paper = compose_run("scale=smoke", "seed=1"), compose_run("scale=paper", "seed=1")
    assert smoke.run_dir() == Path("results/runs/smoke/linreg_ard/advi_M1/seed1")
    assert paper.run_dir() == Path("results/runs/paper/linreg_ard/advi_M1/seed1")
    assert smoke.run_dir(seed=2) == Path("results/runs/smoke/linreg_ard/advi_M1/seed2")


def test_workflows_of_different_scales_plan_disjoint_runs_and_logs():
    plans = [plan_workflow(experiments=["election88"], scale=scale, seeds=[0], overrides=[],
                           conf_dir=CONF_DIR)
             for scale in ("smoke", "paper")]
    smoke, paper = ({run.trace for run in plan.runs} for plan in plans)
    assert smoke and paper and not smoke & paper
    assert all(trace.startswith("results/runs/smoke/election88/") for trace in smoke)


def test_the_sweep_guard_composes_every_run_of_a_sweep_and_names_the_setting(compose_run):
    refuse_shared_folders(["method=advi", "method.grad_samples=1,10", "seed=0,1"])
    with pytest.raises(ValueError, match=r"they differ in method\.max_iter \(100 / 200\)"):
        refuse_shared_folders(["method=advi_robust", "method.max_iter=100,200"])
    with pytest.raises(ValueError, match="AdviConfig.grad_samples = 0"):
        refuse_shared_folders(["method=advi", "method.grad_samples=1,0"])


def test_a_fit_sweep_that_would_share_a_folder_is_refused_before_anything_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "fit.py"), "-m", "scale=smoke",
         "method=advi", "method.tol_rel_obj=0.01,0.001"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "would write results/runs/smoke/linreg_ard/advi_M1/seed0" in result.stderr
    assert "they differ in method.tol_rel_obj (0.01 / 0.001)" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no data, no runs, no sweep folder


def test_the_workflow_runs_every_experiment_by_default():
    config = yaml.safe_load((REPO_ROOT / "conf" / "workflow.yaml").read_text())
    assert "experiments" not in config  # no list to extend: every conf/experiment/*.yaml
    assert experiment_names(CONF_DIR) == EXPERIMENTS == [
        "dirichlet_exponential_nmf", "election88", "gamma_poisson_nmf", "gmm",
        "gmm_minibatch", "gmm_minibatch_10x", "linreg_ard"]


def test_an_experiment_naming_no_model_module_is_refused_naming_the_valid_ones(compose_run):
    with pytest.raises(ValueError, match=r"unknown model 'linreg': there is no "
                                         r"models/linreg.py; valid models: .*linreg_ard"):
        compose_run("experiment.model=linreg")


def test_each_paper_experiment_names_the_claim_it_tests_and_where_the_paper_shows_its_code(
        compose_run):
    claims = {name: compose_run(f"experiment={name}").experiment for name in EXPERIMENTS}
    assert {name: e.claim_id for name, e in claims.items()} == {
        "linreg_ard": "E1", "election88": "E2", "gamma_poisson_nmf": "E3",
        "dirichlet_exponential_nmf": "E4", "gmm": "E5", "gmm_minibatch": "E6",
        "gmm_minibatch_10x": None}
    assert all(e.paper_code.startswith("Appendix ") for e in claims.values())


def test_a_sweep_in_an_experiments_method_list_gives_one_run_per_minibatch_size():
    plan = plan_workflow(experiments=["gmm_minibatch"], scale="paper", seeds=[0],
                         overrides=[], conf_dir=CONF_DIR)
    (e6,) = plan.experiments
    assert e6.methods == ["advi_M1_B50", "advi_M1_B100", "advi_M1_B500", "advi_M1_B1000"]
    assert e6.reference_method == "advi_M1_B1000"
    (job,) = plan.data.values()
    assert job.kwargs == {"num_train": 250_000, "num_heldout": 10_000} and job.image_dir is None


def test_e6_at_10x_streams_its_rows_and_asks_no_memory_for_them():
    plan = plan_workflow(experiments=["gmm_minibatch", "gmm_minibatch_10x"], scale="paper",
                         seeds=[0], overrides=[], conf_dir=CONF_DIR)
    e6, e6_10x = plan.experiments
    assert e6.methods == e6_10x.methods == [
        "advi_M1_B50", "advi_M1_B100", "advi_M1_B500", "advi_M1_B1000"]
    assert not any(run.streamed for run in e6.runs)
    assert all(run.streamed for run in e6_10x.runs)
    sizes = sorted(job.kwargs["num_train"] for job in plan.data.values())
    assert sizes == [250_000, 2_500_000]


def test_e5_and_e6_share_their_data_and_a_model_hyperparameter_differs(compose_run):
    e5 = compose_run("experiment=gmm")
    e6 = compose_run("experiment=gmm_minibatch")
    assert (e5.experiment.model_args["K"], e6.experiment.model_args["K"]) == (10, 30)
    assert e5.experiment_scale().simulate == e6.experiment_scale().simulate
    assert (e5.experiment_scale().load["n_train"], e6.experiment_scale().load["n_train"]) == (
        1000, 250_000)


def test_the_factor_figures_draw_the_first_seed_of_advi_and_vanish_without_it():
    plan = plan_workflow(experiments=["gamma_poisson_nmf", "dirichlet_exponential_nmf"],
                         scale="paper", seeds=[2, 1], overrides=[], conf_dir=CONF_DIR)
    e3, e4 = plan.experiments
    assert (e3.factors.figure, e4.factors.figure) == ("fig5c_gamma_poisson_factors",
                                                      "fig5d_dirichlet_exponential_factors")
    assert e3.factors.posterior_mean == (
        "results/runs/paper/gamma_poisson_nmf/advi_M1/seed1/posterior_mean.npz")
    assert e3.factors.image_shape == (28, 20) and e3.factors.label == "ADVI (M=1)"
    # Figure 5c shows the frames loading most on each factor; Figure 5d the factors alone
    assert e3.factors.top_frames == 4 and e4.factors.top_frames == 0
    assert e3.factors.frames == "results/data/fetched/frey_faces/frey_rawface.npy"
    assert e4.factors.frames is None
    # Figure 5d draws robust ADVI's factors and its caption says why (docs/figure5d.md)
    assert e4.factors.method == "advi_robust_M1" and "face parts" in e4.factors.note
    assert e4.factors.posterior_mean.endswith("advi_robust_M1/seed1/posterior_mean.npz")
    assert {job.path for job in plan.data.values()} == {"results/data/fetched/frey_faces"}
    only_nuts = plan_workflow(experiments=["gamma_poisson_nmf"], scale="paper", seeds=[0],
                              overrides=["method=nuts"], conf_dir=CONF_DIR)
    assert only_nuts.experiments[0].factors is None


def test_image_dir_switches_the_mixture_experiments_to_real_images_only(tmp_path):
    plan = plan_workflow(experiments=["linreg_ard", "gmm"], scale="smoke", seeds=[0],
                         overrides=[f"data.image_dir={tmp_path}"], conf_dir=CONF_DIR)
    jobs = {job.source: job for job in plan.data.values()}
    assert jobs["imageclef"].image_dir == str(tmp_path) and jobs["simulate"].image_dir is None
    assert jobs["imageclef"].path.endswith("_heldout200.npy")


@pytest.mark.parametrize(("override", "message"), [
    ("experiment.factors.image_shape=[28]", r"image_shape = \[28\]"),
    ("experiment.data.source=images", r"source = 'images'"),
])
def test_bad_experiment_values_fail_naming_them(compose_run, override, message):
    with pytest.raises(ValueError, match=message):
        compose_run("experiment=gamma_poisson_nmf", override)


def test_a_minibatch_larger_than_the_training_rows_is_refused_before_any_data(compose_run):
    assert compose_run("experiment=gmm_minibatch", "scale=smoke",
                       "method.minibatch_size=2000").method.minibatch_size == 2000
    with pytest.raises(ValueError, match=r"minibatch_size = 2001 exceeds the 2000 training "
                                         r"rows of experiment 'gmm_minibatch' at scale 'smoke'"):
        compose_run("experiment=gmm_minibatch", "scale=smoke", "method.minibatch_size=2001")


def test_fit_help_lists_the_choices_a_user_may_pick_and_describes_each_main_option():
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "fit.py"), "--help"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    help_text = result.stdout
    for group in ("experiment", "method", "scale"):
        files = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
        assert re.search(rf"^  {group}= +{', '.join(files)}  \(default ", help_text, re.M)
    assert "_schema" not in help_text  # the structured configs are not choices
    for option in ("seed=", "budget_s=", "results_dir=", "mirror_dir=", "data.image_dir=",
                   "method.grad_samples=", "method.minibatch_size=", "method.tol_rel_obj=",
                   "method.eval_draws=", "method.checkpoint_every=", "method.init=",
                   "method.num_warmup="):
        line = next(line for line in help_text.splitlines() if line.startswith(f"  {option}"))
        assert len(line.split()) > 2, line  # the option and words describing it
    assert "== This run's config ==\nexperiment:\n  name: linreg_ard" in help_text


def test_a_data_file_of_your_own_needs_its_path_and_is_read_where_it_is(compose_run):
    with pytest.raises(ValueError, match=r"DataConfig.path = None: data.source: file needs "
                                         r"data.path"):
        compose_run("experiment.data.source=file")
    run = compose_run("experiment.data.source=file", "+experiment.data.path=mine/counts.csv")
    assert str(data_path(run)) == "mine/counts.csv"


def test_experiments_of_two_models_may_not_simulate_into_one_file(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    text = (conf / "experiment" / "linreg_ard.yaml").read_text()
    mine = text.replace("name: linreg_ard\nmodel: linreg_ard", "name: mine\nmodel: gmm")
    (conf / "experiment" / "mine.yaml").write_text(mine)
    with pytest.raises(ValueError, match=r"models 'linreg_ard' and 'gmm' would simulate into "
                                         r"one file, .*linreg_ard/seed0.*another data.name"):
        plan_workflow(experiments=["linreg_ard", "mine"], scale="smoke", seeds=[0],
                      overrides=[], conf_dir=conf)


def test_an_entry_point_reads_the_conf_of_its_own_checkout(tmp_path):
    assert checkout_conf(REPO_ROOT / "scripts" / "fit.py") == REPO_ROOT / "conf"
    (tmp_path / "scripts").mkdir()
    with pytest.raises(FileNotFoundError, match=rf"{tmp_path}/conf holds no config.yaml: "
                                                r"fit.py runs from the scripts/"):
        checkout_conf(tmp_path / "scripts" / "fit.py")
