"""Full-width pages of the Snakemake report, written from the runs' own ``info.json``.

Snakemake's report draws each result's caption in a narrow sidebar, where a table of more
than three columns is unreadable, and renders captions from the Snakemake config, which
need not be the configuration the runs were made with. So every table of the report (the
runs, each experiment's summary, the reproduction of the paper's claims) is a standalone
HTML page, shown full width in the report's main panel, and every fact a page states about
the runs (scale, seeds, draws S, checkpoint spacing, data sizes) is read from the runs'
``info.json`` files that its rule declares as inputs.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from advi_repro.analysis.figures import data_sizes
from advi_repro.analysis.runinfo import describe_resources, other_code
from advi_repro.analysis.summary import run_ending

# What each scale's runs are for: the report says so above every table.
SCALE_NOTES = {
    "smoke": "These runs are at the <b>smoke</b> scale: tiny data, short chains and budgets "
             "of seconds, so that the whole workflow runs in minutes. Their numbers test the "
             "pipeline, not the paper's claims.",
    "paper": "These runs are at the <b>paper</b> scale: the paper's data sizes, chain lengths "
             "and budgets.",
}
# The page's look: readable at 1366 px and wider, long text wrapped, the header row kept.
STYLE = """
body { font-family: system-ui, sans-serif; font-size: 15px; line-height: 1.45; margin: 1.2em;
       color: #222; }
h1 { font-size: 1.35em; margin: 0 0 .4em; }
h2 { font-size: 1.1em; margin: 1.2em 0 .3em; }
p { max-width: 75em; margin: .3em 0 .6em; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #ccc; padding: .3em .5em; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #eef1f5; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
"""


def scale_note(infos: Sequence[Mapping[str, Any]]) -> str:
    """What the runs' scale means (HTML), from their ``scale``; runs of several scales are
    named as such.

    Raises:
        ValueError: no runs.
    """
    scales = sorted({str(info["scale"]) for info in infos})
    if not scales:
        raise ValueError("no runs' info.json given: cannot say at which scale they ran")
    if len(scales) > 1:
        return ("<b>These runs mix scales</b> (" + ", ".join(scales) + "): compare their "
                "numbers with care.")
    return SCALE_NOTES.get(scales[0], f"These runs are at the <b>{html.escape(scales[0])}</b> "
                           "scale.")


def draws_setting(info: Mapping[str, Any]) -> str:
    """How a run was scored, from its resolved config: ADVI's S draws from q and checkpoint
    spacing, or MCMC's warmup and draws (all post-warmup draws are scored)."""
    method = info["config"]["method"]
    if "eval_draws" in method:
        return (f"S = {method['eval_draws']:,} draws from q every "
                f"{method['checkpoint_every']:,} iterations")
    return (f"{method['num_warmup']:,} warmup + {method['num_samples']:,} draws, checkpoint "
            f"every {method['checkpoint_every']:,} transitions")


def runs_table(infos: Sequence[Mapping[str, Any]],
               checkout: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per experiment and method (in the order given): its seeds, scale, budget,
    data sizes, scoring, how the run of its first seed ended and what it ran on (device,
    cores, CPU ids, CPU model, fits beside it:
    :func:`advi_repro.analysis.runinfo.describe_resources`)
    and its final heldout_lpd (mean over seeds), all from the runs' ``info.json``; given the
    ``checkout``'s code version (:func:`advi_repro.planning.rerun.code_version`), a column
    ``code``: ``this checkout's``, or how the code of its runs differs
    (:func:`advi_repro.analysis.runinfo.other_code`)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for info in infos:
        groups.setdefault((info["experiment"], info["method"]), []).append(info)
    rows = []
    for (experiment, _), runs in groups.items():
        first = min(runs, key=lambda info: info["seed"])
        finals = [info["final_heldout_lpd"] for info in runs
                  if info.get("final_heldout_lpd") is not None]
        rows.append({
            "experiment": experiment, "method": first["label"],
            "seeds": ", ".join(str(s) for s in sorted(info["seed"] for info in runs)),
            "scale": ", ".join(sorted({str(info["scale"]) for info in runs})),
            "budget_s": first["budget_s"],
            "data": ", ".join(f"{k} {v}" for k, v in data_sizes(runs).items()),
            "scoring": draws_setting(first),
            "ended (first seed)": run_ending(first),
            "ran on (first seed)": describe_resources(first),
            **({} if checkout is None else {"code": _code_cell(runs, checkout)}),
            "final_heldout_lpd": sum(finals) / len(finals) if finals else float("nan"),
        })
    return pd.DataFrame(rows)


def _code_cell(runs: Sequence[Mapping[str, Any]], checkout: Mapping[str, Any]) -> str:
    """``this checkout's``, or each distinct difference with the seeds it holds for."""
    seeds: dict[str, list[str]] = {}
    for info in sorted(runs, key=lambda info: info["seed"]):
        text = other_code(info, checkout) or "this checkout's"
        seeds.setdefault(text, []).append(str(info["seed"]))
    if len(seeds) == 1:
        return next(iter(seeds))
    return "; ".join(f"seed{'s' if len(s) > 1 else ''} {', '.join(s)}: {text}"
                     for text, s in seeds.items())


def data_lines(infos: Sequence[Mapping[str, Any]]) -> list[str]:
    """The runs' data, one line per distinct data set: its recorded description (or file,
    for runs made before descriptions were recorded) and sizes."""
    lines = []
    for info in infos:
        data = info.get("data", {})
        sizes = ", ".join(f"{k} = {v}" for k, v in data_sizes([info]).items())
        described = data.get("description") or f"Data: {data.get('path')}."
        line = f"{described} Sizes: {sizes}."
        if line not in lines:
            lines.append(line)
    return lines


def html_table(table: pd.DataFrame) -> str:
    """``table`` as an HTML table: headers with spaces for underscores (so that they wrap),
    numbers right-aligned with four significant digits, missing values as ``n/a``, every
    cell's text escaped."""
    head = "".join(f"<th>{html.escape(str(c).replace('_', ' '))}</th>" for c in table.columns)
    body = []
    for row in table.itertuples(index=False):
        cells = []
        for value in row:
            if isinstance(value, float):
                text = "n/a" if pd.isna(value) else f"{value:.4g}"
                cells.append(f'<td class="num">{text}</td>')
            else:
                cells.append(f"<td>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def html_page(title: str, paragraphs: Sequence[str], table: pd.DataFrame) -> str:
    """A standalone page: ``title``, ``paragraphs`` (HTML, trusted: written by this package)
    and ``table`` (:func:`html_table`)."""
    text = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>'
            f"{html.escape(title)}</title><style>{STYLE}</style></head><body><h1>"
            f"{html.escape(title)}</h1>{text}{html_table(table)}</body></html>\n")
