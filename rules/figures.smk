# Per experiment: a summary table (final accuracy, seconds to reach the reference method's
# final accuracy) and the accuracy-against-time figure, whose report caption includes it.


rule summarise:
    input:
        traces=experiment_traces,
    output:
        SUMMARY,
    log:
        f"{RESULTS}/logs/summarise/{{experiment}}.log",
    params:
        runs_dir=lambda wildcards: experiment_of(wildcards).runs_dir,
        methods=lambda wildcards: experiment_of(wildcards).methods,
        reference=lambda wildcards: experiment_of(wildcards).reference_method,
        tolerance=TOLERANCE,
    script:
        "../scripts/summarise.py"


rule plot_accuracy:
    input:
        traces=experiment_traces,
        summary=experiment_summary,
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
        runs_dir=lambda wildcards: experiment_of(wildcards).runs_dir,
        methods=lambda wildcards: experiment_of(wildcards).methods,
        title=lambda wildcards: experiment_of(wildcards).title,
        claim=lambda wildcards: experiment_of(wildcards).claim,
        reference=lambda wildcards: experiment_of(wildcards).reference_method,
        tolerance=TOLERANCE,
    script:
        "../scripts/plot_accuracy.py"
