"""runners: the evaluation protocol shared by all methods (paper Section 3).

- :mod:`runners.config`: the structured configs Hydra composes (experiment, method, scale).
- :mod:`runners.stopwatch`: the clock that stops between chunks.
- :mod:`runners.scoring`: heldout_lpd, a running log-mean-exp over draws.
- :mod:`runners.trace`: trace.csv, one row per checkpoint, atomic rewrites.
- :mod:`runners.posterior`: posterior_mean.npz, the posterior mean of every latent site.
- :mod:`runners.advi_runner`, :mod:`runners.mcmc_runner`: one runner per method family.
- :mod:`runners.run`: one run end to end; :mod:`runners.data`: the data it needs
  (simulated, fetched, or the E5/E6 colour histograms of a stand-in or of real images);
  :mod:`runners.paths`: where everything lives; :mod:`runners.files`: atomic writes;
  :mod:`runners.provenance`: versions and device for info.json.
- :mod:`runners.workflow`: the jobs the Snakemake workflow runs, from the Hydra config.
- :mod:`runners.summary`: trace tables for the figures and the report.
"""
