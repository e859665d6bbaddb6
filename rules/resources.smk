# What each fit job asks a cluster for, from its own run's config (planning/workflow.py's
# RunJob): CPUs, wall time, memory and, when asked, GPUs. The SLURM profile
# (profiles/slurm/config.yaml, docs/cluster.md) passes them to sbatch through
# snakemake-executor-plugin-slurm; run locally (`--cores N`) only the CPUs matter. Any of
# them can be overridden per run of Snakemake: --set-resources fit:runtime=600.
import math
import os

from advi_repro.planning.estimate import wall_clock_limit

# Wall time: the plan's worst case for the run (planning/estimate.py, wall_clock_limit): twice
# the budget, as checkpoint scoring runs off the budget's clock and can cost as much as the
# iterations, plus 15 minutes for start-up, data loading, XLA compilation and the last
# checkpoint past the budget (MCMC: one transition).
# Memory: a fit process holds ~0.5 GB before any data (a smoke fit of election88's ADVI:
# 483 MB maximum resident set, /usr/bin/time -v), given 2 GB for larger compiled programs
# and scoring buffers; plus four copies of its data file (the file as read, its float32 JAX
# copy, the train/held-out split, the per-checkpoint scoring of the held-out rows).
MEM_BASE_MB = 2000
MEM_PER_DATA_MB = 4


# Only the fits and the imageCLEF features (minutes of CPU) go to a cluster. The other rules
# take seconds, less than a cluster job's own overhead (queueing, then a Snakemake process
# on the node that reads the workflow again: 26-50 s per job of these rules on the local
# test cluster, scripts/slurm_local.sh), so they run where Snakemake runs; fetch_data too,
# as cluster nodes often have no route to the internet.
localrules:
    all,
    simulate_data,
    fetch_data,
    summarise,
    plot_accuracy,
    plot_factors,
    plot_standin_images,
    fig3_transformations,
    model_source,
    claims,
    runs_page,


def fit_runtime_min(wildcards):
    """The fit's wall-time limit in minutes (SLURM's --time): the plan's worst case for its
    budget (`budget_s`, seconds; planning/estimate.py's wall_clock_limit), rounded up.

    Raises:
        ValueError: the run has no finite budget (the limit would be unbounded).
    """
    job = run_job(wildcards)
    if not math.isfinite(job.budget_s):
        raise ValueError(f"run {job.trace}: budget_s = {job.budget_s}; a cluster job needs "
                         "a finite budget in seconds (budget_s=<s>), or set the limit with "
                         "--set-resources fit:runtime=<minutes>")
    return math.ceil(wall_clock_limit(job.budget_s) / 60)


def data_size_mb(path):
    """The size in MB (10^6 bytes) of a data file, or of every file under a data folder.

    Raises:
        FileNotFoundError: the data does not exist yet (Snakemake then sizes the job again
            once the data rules have made it).
    """
    if not os.path.isdir(path):
        return os.stat(path).st_size / 1e6
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.stat(os.path.join(root, name)).st_size for name in files)
    return total / 1e6


def fit_mem_mb(wildcards, input):
    """The fit's memory in MB (SLURM's --mem): MEM_BASE_MB plus MEM_PER_DATA_MB times its
    data's size on disk, or MEM_BASE_MB alone for a run whose data are streamed from the
    file (a pool of rows at a time: benchmarks/bench_stream.py measured 0.6 GiB beyond the
    opened file at every size)."""
    if run_job(wildcards).streamed:
        return MEM_BASE_MB
    return math.ceil(MEM_BASE_MB + MEM_PER_DATA_MB * data_size_mb(input.data))


def fit_gpus(wildcards):
    """GPUs per fit (SLURM's --gpus): the workflow config's `gpus`, 0 (none) by default; a
    GPU fit needs JAX's CUDA build (docs/cluster.md)."""
    return int(config["gpus"])
