"""runners: the timing protocol of one run, shared by all methods (paper Section 3).

- :mod:`runners.run`: one run end to end (config -> data -> model -> runner -> files);
- :mod:`runners.advi_runner`, :mod:`runners.mcmc_runner`: one runner per method family;
- :mod:`runners.stopwatch`: the clock that stops between chunks;
- :mod:`runners.scoring`: heldout_lpd, a running log-mean-exp over draws;
- :mod:`runners.checkpoint`: what a checkpoint scores and writes;
- :mod:`runners.trace`: trace.csv, one row per checkpoint, atomic rewrites;
- :mod:`runners.posterior`: posterior_mean.npz, the posterior mean of every latent site;
- :mod:`runners.interrupt`: Ctrl-C and SIGTERM stop at the next checkpoint;
- :mod:`runners.cpus`: the run's share of CPUs; :mod:`runners.provenance`: versions and
  device; :mod:`runners.xla`: XLA flags of the process.

It reads its configuration and data through :mod:`planning`; the report (:mod:`analysis`)
reads only the files it writes.
"""
