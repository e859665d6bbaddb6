"""planning: what the workflow runs and where everything lives.

- :mod:`planning.config`: the structured configs Hydra composes (experiment, method, scale);
- :mod:`planning.naming`: run names, built from a config and read back;
- :mod:`planning.workflow`: the jobs of the Snakemake workflow, from the Hydra config;
- :mod:`planning.estimate`: how long the plan should take on N cores;
- :mod:`planning.cli`: the command line's checks and errors;
- :mod:`planning.paths`: where inputs and outputs live; :mod:`planning.files`: atomic writes;
- :mod:`planning.data`: a run's data (simulated, fetched, or the E5/E6 histograms), made
  by :mod:`planning.datasets`;
- :mod:`planning.scriptlog`: logging of the data scripts.
"""
