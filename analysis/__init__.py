"""analysis: the report, read from the runs' files (trace.csv, info.json); it never
imports the timing protocol (:mod:`runners`).

- :mod:`advi_repro.analysis.summary`: trace tables (per seed too);
  :mod:`advi_repro.analysis.claims`: the criteria of the paper's claims;
  :mod:`advi_repro.analysis.reproduction`: the reproduction table, judged on the means over
  seeds and on each seed;
- :mod:`advi_repro.analysis.figures`: the accuracy figures;
  :mod:`advi_repro.analysis.report_pages`: the report's
  full-width pages; :mod:`advi_repro.analysis.runinfo`: what runs' info.json say (set-ups, data);
- :mod:`advi_repro.analysis.transformation`: E0's closed forms (Figure 3).
"""
