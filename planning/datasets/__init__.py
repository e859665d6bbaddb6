"""Data for the paper's experiments: real data fetched and checked, simulated data from seeds.

- ``fetch``: election88 and Frey faces from a local mirror or upstream, sha256-checked.
- ``derive``: the files made from the upstream originals (CSV tables, the .npy matrix).
- ``simulate``: the imageCLEF stand-ins (E5, E6); other simulated data come from the model
  module's own ``simulate`` (``advi_repro.models``).
- ``procedural``: seeded procedural colour images, the raw material of the default stand-in.
- ``images``: 576-dimensional RGB histograms of a folder of images (E5, E6 on real images).
"""
