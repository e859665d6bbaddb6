"""runners: the timing protocol of one run, shared by all methods (paper Section 3).

- :mod:`advi_repro.runners.run`: one run end to end (config -> data -> model -> runner -> files);
- :mod:`advi_repro.runners.advi_runner`, :mod:`advi_repro.runners.mcmc_runner`: one runner per
  method family;
- :mod:`advi_repro.runners.stopwatch`: the clock that stops between chunks;
- :mod:`advi_repro.runners.scoring`: heldout_lpd, a running log-mean-exp over draws;
- :mod:`advi_repro.runners.checkpoint`: what a checkpoint scores and writes;
- :mod:`advi_repro.runners.trace`: trace.csv, one row per checkpoint, atomic rewrites;
- :mod:`advi_repro.runners.posterior`: posterior_mean.npz, the posterior mean of every latent site;
- :mod:`advi_repro.runners.interrupt`: Ctrl-C and SIGTERM stop at the next checkpoint;
- :mod:`advi_repro.runners.cpus`: the run's share of CPUs; :mod:`advi_repro.runners.provenance`:
  versions and
  device.

It reads its configuration and data through :mod:`planning`; the report (:mod:`analysis`)
reads only the files it writes.
"""
