"""analysis: the report, read from the runs' files (trace.csv, info.json); it never
imports the timing protocol (:mod:`runners`).

- :mod:`advi_repro.analysis.summary`: trace tables; :mod:`advi_repro.analysis.claims`: the paper's
  claims judged;
- :mod:`advi_repro.analysis.figures`: the accuracy figures;
  :mod:`advi_repro.analysis.report_pages`: the report's
  full-width pages; :mod:`advi_repro.analysis.runinfo`: what runs' info.json say (set-ups, data);
- :mod:`advi_repro.analysis.transformation`: E0's closed forms (Figure 3).
"""
