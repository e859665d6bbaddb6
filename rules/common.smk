# The plan of runs, composed from the Hydra config (planning/workflow.py), and the input
# functions the rules use.
import re
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from advi_repro.planning.paths import fetched_data_dir, imageclef_data_dir, run_dir, simulated_data_dir
from advi_repro.planning.estimate import plan_report, read_estimates
from advi_repro.planning.rerun import code_version
from advi_repro.planning.workflow import experiment_names, plan_workflow


validate(config, "../conf/workflow.schema.yaml")

# The conf/ beside the Snakefile, as fit.py's: the checkout's own, whichever checkout the
# packages are installed from (planning/paths.py, checkout_conf).
CONF = Path(workflow.basedir) / "conf"
PLAN = plan_workflow(
    # every conf/experiment/*.yaml unless the config names some
    experiments=config.get("experiments") or experiment_names(CONF),
    scale=config["scale"],
    seeds=[int(seed) for seed in config["seeds"]],
    overrides=config["overrides"],
    conf_dir=CONF,
)
# The code runs are made by now (git commit, uncommitted changes, package version): the page
# of the runs marks runs whose info.json records other code.
CHECKOUT = code_version()
RESULTS = PLAN.results_dir
EXPERIMENTS = {experiment.name: experiment for experiment in PLAN.experiments}
FIGURES = {experiment.figure: experiment for experiment in PLAN.experiments}
# Figures of fitted factors (Figures 5c, 5d), by file stem.
FACTORS = {e.factors.figure: e.factors for e in PLAN.experiments if e.factors is not None}
# The procedural imageCLEF stand-ins in use (E5, E6 without data.image_dir), by file stem:
# each gets a figure of its first images and their histograms.
STANDIN_IMAGES = {
    Path(job.path).stem: job
    for job in PLAN.data.values()
    if job.source == "imageclef" and job.image_dir is None and job.name == "image_standin"
}
RUNS = {(run.scale, run.experiment, run.method, str(run.seed)): run for run in PLAN.runs}
if workflow.is_main_process and config["scale"] == "paper":
    # The runs, their budgets and how long they should take on --cores (planning/estimate.py).
    print(plan_report(PLAN.runs, workflow.resource_settings.cores or 1,
                      read_estimates(CONF / "estimates.yaml")), file=sys.stderr)
# Path patterns; runs and data are laid out by planning/paths.py, as scripts/fit.py does.
RUN_DIR = run_dir(RESULTS, "{scale}", "{experiment}", "{method}", "{seed}")
SIMULATED = simulated_data_dir(RESULTS, "{dataset}") / "{stem}.npz"
FETCHED = fetched_data_dir(RESULTS, "{dataset}")
IMAGECLEF = imageclef_data_dir(RESULTS) / "{stem}.npy"
SUMMARY = f"{RESULTS}/summaries/{{experiment}}.csv"
SUMMARY_PAGE = f"{RESULTS}/summaries/{{experiment}}.html"
SEED_SUMMARY = f"{RESULTS}/summaries/seeds/{{experiment}}.csv"
FIGURE = f"{RESULTS}/figures/{{figure}}"
STANDIN_FIGURE = f"{RESULTS}/figures/imageclef_{{stem}}"
# "Close to the reference": within this fraction of its final heldout_lpd (summary, caption).
TOLERANCE = 0.01


wildcard_constraints:
    scale="[^/]+",
    experiment="[^/]+",
    method="[^/]+",
    seed=r"\d+",
    figure="[^/]+",
    dataset="[^/]+",
    stem="[^/]+",


def one_of(names):
    """A wildcard regex matching exactly these names (none: matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


def figure_files():
    return [*expand(f"{FIGURE}.{{ext}}", figure=[*FIGURES, *FACTORS], ext=("png", "pdf")),
            *expand(f"{STANDIN_FIGURE}.{{ext}}", stem=STANDIN_IMAGES, ext=("png", "pdf"))]


def summary_files():
    return expand(SUMMARY, experiment=EXPERIMENTS)


def seed_summary_files():
    return expand(SEED_SUMMARY, experiment=EXPERIMENTS)


def summary_pages():
    return expand(SUMMARY_PAGE, experiment=EXPERIMENTS)


def run_job(wildcards):
    """The planned run of a fit job's wildcards."""
    return RUNS[(wildcards.scale, wildcards.experiment, wildcards.method, wildcards.seed)]


def fit_threads(wildcards):
    """The cores the run's config gives it (`cores`, conf/config.yaml): Snakemake runs as many
    fits side by side as --cores allows, and each pins itself to its own (runners/cpus.py)."""
    return run_job(wildcards).cores


def fit_overrides(wildcards, input, output):
    """The run's Hydra overrides and the files the rule hands it, its data (input) and its
    folder (output's), quoted for the shell: the job never derives them itself. Takes
    `input` and `output` so that Snakemake counts it as derived and does not compare it:
    `fit_config` is what is compared."""
    folder = Path(output.trace).parent
    files = [f'input_data="{input.data}"', f'output_dir="{folder}"']  # Hydra-quoted
    return " ".join(shlex.quote(o) for o in [*run_job(wildcards).overrides, *files])


def fit_script(wildcards, output):
    """scripts/fit.py beside the Snakefile; derived, as `fit_overrides`, so that moving the
    checkout redoes no run."""
    return f"{workflow.basedir}/scripts/fit.py"


def fit_config(wildcards):
    """The hash of the run's settings that can change its result (planning/rerun.py): a
    parameter Snakemake records with the run and compares, so a run is redone when a conf/
    YAML file or an override changes its result, and only then."""
    return run_job(wildcards).config_sha256


def experiment_of(wildcards):
    """The planned experiment of a job, by its `figure` or its `experiment` wildcard."""
    if "figure" in wildcards.keys():
        return FIGURES[wildcards.figure]
    return EXPERIMENTS[wildcards.experiment]


def experiment_traces(wildcards):
    """The traces of the experiment's planned runs (of this configuration only)."""
    return experiment_of(wildcards).traces


def experiment_infos(wildcards):
    """The info.json of the experiment's planned runs."""
    return experiment_of(wildcards).infos


def data_job(output):
    return PLAN.data[str(output[0])]


def image_dir_input(wildcards):
    """The folder of real images an imageclef data file is computed from (none: simulated)."""
    job = PLAN.data[str(IMAGECLEF).format(stem=wildcards.stem)]
    return [job.image_dir] if job.image_dir else []


def factors_input(wildcards):
    """The run's posterior mean and, when frames are shown beside the factors, the data."""
    factors = FACTORS[wildcards.figure]
    inputs = {"posterior_mean": factors.posterior_mean}
    if factors.data is not None:
        inputs["data"] = factors.data  # the folder the fetch rule makes
    return inputs
