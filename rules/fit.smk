# One job per run (experiment x method x seed). Each job takes the cores its config declares
# (`cores`, one by default), so `--cores N` runs fits side by side, each pinned to CPUs no
# other fit uses (runners/cpus.py; info.json records them and what ran beside); a fit gets
# the cores Snakemake gave it (fewer when --cores is smaller than its declaration). Progress
# (iterations, ELBO or acceptance, seconds) goes to the job's log. `exec` makes fit.py the
# child of Snakemake itself, so it gets SIGTERM when Snakemake dies (runners/interrupt.py)
# and stops at its next checkpoint, keeping its run as seed<k>.partial. The job gets its
# data file and its folder from this rule's input and output (input_data=, output_dir=,
# added to its overrides by fit_overrides): it never derives them, and never makes data.


rule fit:
    input:
        data=lambda wildcards: run_job(wildcards).data,
    output:
        trace=f"{RUN_DIR}/trace.csv",
        posterior_mean=f"{RUN_DIR}/posterior_mean.npz",
        info=f"{RUN_DIR}/info.json",
    log:
        f"{RESULTS}/logs/fit/{{scale}}/{{experiment}}/{{method}}/seed{{seed}}.log",
    # Snakemake redoes a fit when `config` changes (the hash of its result's settings,
    # planning/rerun.py), not when the text of its overrides or the checkout's path does.
    params:
        config=fit_config,
        script=fit_script,
        overrides=fit_overrides,
    threads: fit_threads
    # what a cluster job asks for (rules/resources.smk, profiles/slurm)
    resources:
        cpus_per_task=fit_threads,
        runtime=fit_runtime_min,
        mem_mb=fit_mem_mb,
        gpu=fit_gpus,
    shell:
        "exec python {params.script} {params.overrides} cores={threads} > {log} 2>&1"
