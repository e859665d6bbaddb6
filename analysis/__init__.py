"""analysis: the report, read from the runs' files (trace.csv, info.json); it never
imports the timing protocol (:mod:`runners`).

- :mod:`analysis.summary`: trace tables; :mod:`analysis.claims`: the paper's claims judged;
- :mod:`analysis.figures`: the accuracy figures; :mod:`analysis.report_pages`: the report's
  full-width pages; :mod:`analysis.runinfo`: what runs' info.json say (set-ups, data);
- :mod:`analysis.transformation`: E0's closed forms (Figure 3).
"""
