"""advi_repro: the reproduction workflow's code, installed under one name beside the library.

Its subpackages live in the repository's own folders (``pyproject.toml``'s package-dir):

- :mod:`advi_repro.models` (``models/``): the paper's NumPyro models and their held-out scoring;
- :mod:`advi_repro.runners` (``runners/``): the timing protocol of one run;
- :mod:`advi_repro.planning` (``planning/``): the Hydra config, the plan of runs, the data jobs;
- :mod:`advi_repro.analysis` (``analysis/``): summaries, claims, figures and report pages.

The library itself is :mod:`advi`, which imports nothing from here.
"""
