# Reproduces the ADVI paper's experiments end to end:
#   snakemake --cores all                       (paper scale)
#   snakemake --cores all --config scale=smoke  (minutes)
#   snakemake --report results/report.html      (after either, with the same --config)
# What runs is composed from the Hydra config in the conf/ beside this file
# (planning/workflow.py); a run is redone when its settings change (docs/workflow.md,
# "Interrupting, resuming, rerunning").
#
# `snakemake --lint` asks for a conda environment per rule; that is its one lint, and it is
# left on purpose: every rule imports this repository's own packages (runners, models,
# advi), installed with `pip install -e .` (or `environment.yml`) in the environment that
# runs Snakemake. A rule-level `conda: "../environment.yml"` would not work with
# --use-conda: Snakemake copies the file to .snakemake/conda/, where its `pip: -e .` no
# longer names the repository. So the rules run in the environment Snakemake runs in.
from snakemake.utils import min_version

min_version("9.0")


configfile: workflow.source_path("conf/workflow.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/resources.smk"
include: "rules/data.smk"
include: "rules/fit.smk"
include: "rules/figures.smk"
include: "rules/report.smk"


rule all:
    input:
        figures=figure_files(),
        summaries=summary_files(),
        seed_summaries=seed_summary_files(),
        summary_pages=summary_pages(),
        report=REPORT_FILES,
    default_target: True
