# The plan of runs, composed from the Hydra config (runners/workflow.py), and the input
# functions the rules use.
import shlex

from snakemake.utils import validate

from runners.paths import fetched_data_dir, run_dir, simulated_data_dir
from runners.workflow import plan_workflow


validate(config, "../conf/workflow.schema.yaml")

PLAN = plan_workflow(
    experiments=config["experiments"],
    scale=config["scale"],
    seeds=[int(seed) for seed in config["seeds"]],
    overrides=config["overrides"],
)
RESULTS = PLAN.results_dir
EXPERIMENTS = {experiment.name: experiment for experiment in PLAN.experiments}
FIGURES = {experiment.figure: experiment for experiment in PLAN.experiments}
RUNS = {(run.experiment, run.method, str(run.seed)): run for run in PLAN.runs}
# Path patterns; runs and data are laid out by runners/paths.py, as scripts/fit.py does.
RUN_DIR = run_dir(RESULTS, "{experiment}", "{method}", "{seed}")
SIMULATED = simulated_data_dir(RESULTS, "{dataset}") / "{stem}.npz"
FETCHED = fetched_data_dir(RESULTS, "{dataset}")
SUMMARY = f"{RESULTS}/summaries/{{experiment}}.csv"
FIGURE = f"{RESULTS}/figures/{{figure}}"
# "Close to the reference": within this fraction of its final heldout_lpd (summary, caption).
TOLERANCE = 0.01


wildcard_constraints:
    experiment="[^/]+",
    method="[^/]+",
    seed=r"\d+",
    figure="[^/]+",
    dataset="[^/]+",
    stem="[^/]+",


def figure_files():
    return expand(f"{FIGURE}.{{ext}}", figure=FIGURES, ext=("png", "pdf"))


def summary_files():
    return expand(SUMMARY, experiment=EXPERIMENTS)


def run_job(wildcards):
    """The planned run of a fit job's wildcards."""
    return RUNS[(wildcards.experiment, wildcards.method, wildcards.seed)]


def fit_overrides(wildcards):
    """The run's Hydra overrides, quoted for the shell."""
    return " ".join(shlex.quote(o) for o in run_job(wildcards).overrides)


def experiment_of(wildcards):
    """The planned experiment of a job, by its `figure` or its `experiment` wildcard."""
    if "figure" in wildcards.keys():
        return FIGURES[wildcards.figure]
    return EXPERIMENTS[wildcards.experiment]


def experiment_traces(wildcards):
    """The traces of the experiment's planned runs."""
    return [run.trace for run in experiment_of(wildcards).runs]


def experiment_summary(wildcards):
    return SUMMARY.format(experiment=experiment_of(wildcards).name)


def data_job(output):
    return PLAN.data[str(output[0])]
