"""The Hydra config: every experiment composes, typos and bad values fail before a run."""

import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from runners.config import AdviConfig, HmcConfig, NutsConfig, register, to_run
from runners.paths import REPO_ROOT
from runners.workflow import CONF_DIR, expand_sweeps, plan_workflow

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
SCALES = sorted(p.stem for p in (CONF_DIR / "scale").glob("*.yaml"))


@pytest.fixture
def compose_run():
    register()
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
    for method in base.experiment.methods:
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
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},  # the repo's packages, installed or not
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


def test_the_workflow_plan_runs_each_experiments_methods_for_each_seed():
    plan = plan_workflow(experiments=["linreg_ard", "election88"], scale="smoke", seeds=[0, 1],
                         overrides=[])
    linreg, election = plan.experiments
    assert linreg.methods == ["advi_M1", "advi_M10", "nuts", "hmc"]
    assert len(plan.runs) == 16
    assert linreg.runs[0].overrides == (
        "experiment=linreg_ard", "scale=smoke", "method=advi", "method.grad_samples=1", "seed=0")
    assert linreg.runs[0].trace == "results/runs/linreg_ard/advi_M1/seed0/trace.csv"
    assert {job.source for job in plan.data.values()} == {"simulate", "fetch"}
    assert election.runs[0].data == "results/data/fetched/election88"


def test_a_workflow_override_that_picks_the_method_replaces_the_methods_list():
    plan = plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                         overrides=["method=advi", "method.minibatch_size=50,100"])
    assert plan.experiments[0].methods == ["advi_M1_B50", "advi_M1_B100"]


def test_a_sweep_over_a_setting_the_name_does_not_record_is_refused():
    with pytest.raises(ValueError, match="would write"):
        plan_workflow(experiments=["linreg_ard"], scale="smoke", seeds=[0],
                      overrides=["method=advi", "method.tol_rel_obj=0.1,0.01"])
