"""planning: what the workflow runs and where everything lives.

- :mod:`advi_repro.planning.config`: the structured configs Hydra composes (experiment, method,
  scale);
- :mod:`advi_repro.planning.naming`: run names, built from a config and read back;
- :mod:`advi_repro.planning.workflow`: the jobs of the Snakemake workflow, from the Hydra config;
- :mod:`advi_repro.planning.estimate`: how long the plan should take on N cores;
- :mod:`advi_repro.planning.rerun`: what redoes a run (the hash of its settings) and the code
  version a run records;
- :mod:`advi_repro.planning.cli`: the command line's checks and errors;
- :mod:`advi_repro.planning.paths`: where inputs and outputs live;
  :mod:`advi_repro.planning.files`: atomic writes;
- :mod:`advi_repro.planning.data`: a run's data (simulated, fetched, or the E5/E6 histograms), made
  by :mod:`advi_repro.planning.datasets`;
- :mod:`advi_repro.planning.scriptlog`: logging of the data scripts.
"""
