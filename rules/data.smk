# Data: simulated from a seed, fetched from the mirror (or upstream) and sha256-checked, or
# (E5, E6) the colour histograms: a simulated stand-in, or those of data.image_dir's images.
# The train/held-out split is the model's `load`, seeded by experiment.data.seed.


rule simulate_data:
    output:
        str(SIMULATED),
    log:
        f"{RESULTS}/logs/simulate_data/{{dataset}}/{{stem}}.log",
    params:
        job=lambda wildcards, output: data_job(output),
    script:
        "../scripts/simulate_data.py"


rule fetch_data:
    output:
        directory(str(FETCHED)),
    log:
        f"{RESULTS}/logs/fetch_data/{{dataset}}.log",
    params:
        job=lambda wildcards, output: data_job(output),
    script:
        "../scripts/fetch_data.py"


rule imageclef_features:
    input:
        image_dir_input,
    output:
        str(IMAGECLEF),
    log:
        f"{RESULTS}/logs/imageclef_features/{{stem}}.log",
    params:
        job=lambda wildcards, output: data_job(output),
    script:
        "../scripts/imageclef_features.py"
