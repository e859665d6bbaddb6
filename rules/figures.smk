# Per experiment: a summary table (final accuracy, seconds to reach the reference method's
# Per experiment: a summary table (final accuracy, seconds to reach the reference method's
# final accuracy; as CSV and as a full-width report page) and the accuracy-against-time
# figure; for the factorisation models also the factors of one run as images (Figures 5c,
# 5d); for the procedural imageCLEF stand-in a sample of its images and their histograms.
# Scripts read their declared inputs only: the planned runs of this configuration, never
# whatever else lies under results/runs/.


rule summarise:
    input:
        traces=experiment_traces,
        infos=experiment_infos,
    output:
        table=SUMMARY,
        seeds=SEED_SUMMARY,
        page=report(
            SUMMARY_PAGE,
            caption="../report/summary.rst",
            category="Summary tables",
            labels={"experiment": "{experiment}"},
        ),
    log:
        f"{RESULTS}/logs/summarise/{{experiment}}.log",
    params:
        methods=lambda wildcards: experiment_of(wildcards).methods,
        reference=lambda wildcards: experiment_of(wildcards).reference_method,
        tolerance=TOLERANCE,
        title=lambda wildcards: experiment_of(wildcards).title,
        experiment=lambda wildcards: wildcards.experiment,
    script:
        "../scripts/summarise.py"


rule plot_accuracy:
    wildcard_constraints:
        figure=one_of(FIGURES),
    input:
        traces=experiment_traces,
        infos=experiment_infos,
    output:
        png=report(
            f"{FIGURE}.png",
            caption="../report/accuracy.rst",
            category="Accuracy against time",
            labels={"figure": "{figure}"},
        ),
        pdf=f"{FIGURE}.pdf",
    log:
        f"{RESULTS}/logs/plot_accuracy/{{figure}}.log",
    params:
        methods=lambda wildcards: experiment_of(wildcards).methods,
        title=lambda wildcards: experiment_of(wildcards).title,
        claim=lambda wildcards: experiment_of(wildcards).claim,
        reference=lambda wildcards: experiment_of(wildcards).reference_method,
        tolerance=TOLERANCE,
        experiment=lambda wildcards: experiment_of(wildcards).name,
    script:
        "../scripts/plot_accuracy.py"


rule plot_factors:
    wildcard_constraints:
        figure=one_of(FACTORS),
    input:
        unpack(factors_input),
    output:
        png=report(
            f"{FIGURE}.png",
            caption="../report/factors.rst",
            category="Factors",
            labels={"figure": "{figure}"},
        ),
        pdf=f"{FIGURE}.pdf",
    log:
        f"{RESULTS}/logs/plot_factors/{{figure}}.log",
    params:
        factors=lambda wildcards: FACTORS[wildcards.figure],
    script:
        "../scripts/plot_factors.py"


rule plot_standin_images:
    wildcard_constraints:
        stem=one_of(STANDIN_IMAGES),
    output:
        png=report(
            f"{STANDIN_FIGURE}.png",
            caption="../report/standin_images.rst",
            category="Accuracy against time",
            labels={"figure": "imageCLEF stand-in: {stem}"},
        ),
        pdf=f"{STANDIN_FIGURE}.pdf",
    log:
        f"{RESULTS}/logs/plot_standin_images/{{stem}}.log",
    params:
        job=lambda wildcards: STANDIN_IMAGES[wildcards.stem],
    script:
        "../scripts/plot_standin_images.py"
