"""The validation suite's tables, from its rows (``bench_suite.py``): per target, and a
summary per method, in markdown; and the page ``docs/library/generalisation.md`` that holds
them between two markers."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from advi.spread import SPREAD_NOTE

NUTS_VALID_RMS = 0.15
"""A target counts where NUTS's median RMS z over its seeds is at most this."""
FAR_OFF, CLOSE = 1.0, 0.5
"""A fit is far off above FAR_OFF RMS z (silent where it neither warned nor raised); a
warning on a fit within CLOSE is a false alarm."""
SD_FAR = math.log(2.0)
"""A fit's sds are far off where the median |log(sd of draws / true sd)| over its
quantities (``log_sd``) is above this: a factor of 2."""
METHOD_ORDER = ("advi_stan", "advi_robust", "advi_robust_fullrank", "svi", "nuts")
BEGIN, END = "<!-- suite table: begin -->", "<!-- suite table: end -->"


def _median(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def silent(row: dict[str, Any]) -> bool:
    """Far off (RMS z > FAR_OFF, or non-finite draws) with no warning about its means (a
    note of its sds alone, as :func:`false_alarm` reads it, does not count) and no error."""
    off = row["rms_z"] > FAR_OFF or row["nonfinite"]
    return bool(off and not _about_means(row) and not row["raised"])


def _about_means(row: dict[str, Any]) -> bool:
    """Warned, other than of its sds (``advi.spread.SPREAD_NOTE``)."""
    notes = row.get("notes")
    return bool(row["warned"] if notes is None else any(
        not note.startswith(SPREAD_NOTE) for note in notes))


def sd_silent(row: dict[str, Any]) -> bool:
    """Its sds far off (``log_sd`` > SD_FAR) with no warning and no error: draws whose
    spread misstates the posterior's by more than a factor of 2, unsaid."""
    return bool(row["log_sd"] > SD_FAR and not row["warned"] and not row["raised"])


def false_alarm(row: dict[str, Any]) -> bool:
    """Warned, other than of its sds (``advi.spread.SPREAD_NOTE``: a note of the spread,
    not the means), on a fit within CLOSE."""
    return bool(_about_means(row) and row["rms_z"] <= CLOSE)


def spread_alarm(row: dict[str, Any]) -> bool:
    """Noted its sds (SPREAD_NOTE) where every compared quantity's is within a factor of 2
    (``max_log_sd`` <= SD_FAR; rows from before it was recorded: ``log_sd``, the median)."""
    noted = any(note.startswith(SPREAD_NOTE) for note in row.get("notes") or [])
    return bool(noted and row.get("max_log_sd", row["log_sd"]) <= SD_FAR)


def counted_targets(rows: list[dict[str, Any]]) -> dict[str, bool]:
    """Target -> whether NUTS reproduced its truth (median RMS z <= NUTS_VALID_RMS);
    targets without NUTS rows count (nothing says otherwise)."""
    out: dict[str, bool] = {}
    for target in dict.fromkeys(r["target"] for r in rows):
        nuts = [r["rms_z"] for r in rows if r["target"] == target and r["method"] == "nuts"]
        out[target] = not nuts or _median(nuts) <= NUTS_VALID_RMS
    return out


def _cell(rows: list[dict[str, Any]]) -> str:
    """'median / worst' RMS z over seeds, then flags: W n (warned), E n (raised),
    NF n (non-finite draws), ! n (silently far off)."""
    if not rows:
        return ""
    values = [r["rms_z"] for r in rows]
    text = f"{_median(values):.2f} / {max(values):.2f}" if len(rows) > 1 else f"{values[0]:.2f}"
    if all(math.isnan(v) for v in values):
        text = "-"
    for flag, test in (("W", lambda r: r["warned"]), ("E", lambda r: r["raised"]),
                       ("NF", lambda r: r["nonfinite"]), ("!", silent)):
        count = sum(bool(test(r)) for r in rows)
        if count:
            text += f" {flag}{count}"
    return text


def _cold(rows: list[dict[str, Any]]) -> float:
    cold = [r["seconds"] for r in rows if r.get("cold")]
    return cold[0] if cold else math.nan


def per_target(rows: list[dict[str, Any]], targets: dict[str, Any]) -> list[str]:
    """The per-target table's lines."""
    methods = [m for m in METHOD_ORDER if any(r["method"] == m for r in rows)]
    counts = counted_targets(rows)
    lines = ["| target | K | truth | counts | " + " | ".join(methods)
             + " | cold s: " + ", ".join(methods) + " |",
             "| --- | ---: | --- | --- | " + " | ".join("---:" for _ in methods) + " | --- |"]
    for target, ok in counts.items():
        mine = [r for r in rows if r["target"] == target]
        cells = [_cell([r for r in mine if r["method"] == m]) for m in methods]
        cold = ", ".join(f"{_cold([r for r in mine if r['method'] == m]):.1f}"
                         for m in methods)
        source = targets[target].source if target in targets else ""
        lines.append(f"| {target} | {mine[0]['dim']} | {source} | {'yes' if ok else 'no'} | "
                     + " | ".join(cells) + f" | {cold} |")
    return lines


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """Per method over the counted targets: runs, median RMS z, silent far-off fits,
    non-finite fits, false alarms, median ``log_sd``, fits whose sds are silently off by
    more than a factor of 2, fits that noted their sds where none is off by 2x, cold
    seconds against NUTS's (median and worst ratio)."""
    counts = counted_targets(rows)
    kept = [r for r in rows if counts[r["target"]]]
    nuts_cold = {t: _cold([r for r in kept if r["target"] == t and r["method"] == "nuts"])
                 for t in counts}
    lines = ["| method | runs | median RMS z | silent > 1 sd | non-finite | raised "
             "| false alarms (warned within 0.5 sd) | median log sd error "
             "| sds off > 2x, unwarned | sds noted, none off > 2x "
             "| cold s / NUTS's: median, worst |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for method in METHOD_ORDER:
        mine = [r for r in kept if r["method"] == method]
        if not mine:
            continue
        ratios = [_cold([r for r in mine if r["target"] == t]) / nuts_cold[t]
                  for t in counts if counts[t] and not math.isnan(nuts_cold[t])]
        ratios = [x for x in ratios if not math.isnan(x)]
        ratio = (f"{statistics.median(ratios):.2f}, {max(ratios):.2f}" if ratios else "-")
        lines.append(
            f"| {method} | {len(mine)} | {_median([r['rms_z'] for r in mine]):.3f} "
            f"| {sum(silent(r) for r in mine)} | {sum(bool(r['nonfinite']) for r in mine)} "
            f"| {sum(bool(r['raised']) for r in mine)} "
            f"| {sum(false_alarm(r) for r in mine)} of {len(mine)} "
            f"| {_median([r['log_sd'] for r in mine]):.2f} | {sum(sd_silent(r) for r in mine)} "
            f"| {sum(spread_alarm(r) for r in mine)} | {ratio} |")
    return lines


def concurrency(rows: list[dict[str, Any]]) -> str:
    """How the cold rows were run: their ``jobs`` (fits at a time), "mixed" where they
    differ, "unrecorded" where no row records it (rows before ``jobs`` was kept)."""
    jobs = {r.get("jobs") for r in rows if r.get("cold")}
    if jobs == {None}:
        return "cold s: fits at a time unrecorded"
    if len(jobs) == 1:
        count = jobs.pop()
        return f"cold s: {count} fit{'s' if count != 1 else ''} at a time"
    known = sorted(j for j in jobs if j is not None)
    return ("cold s: mixed runs, " + " and ".join(map(str, known)) + " fits at a time"
            + (" and unrecorded" if None in jobs else "") + ": not comparable")


def markdown(rows: list[dict[str, Any]], targets: dict[str, Any]) -> str:
    """Both tables, with a legend."""
    if not rows:
        return "(no rows)"
    seeds = len({r["seed"] for r in rows})
    return "\n".join([
        f"RMS z-error of the means (median / worst of {seeds} seeds); W n: n fits warned, "
        "E n: raised, NF n: returned non-finite draws, ! n: silently far off (> 1 sd, or "
        f"non-finite, with no warning); counts: NUTS within {NUTS_VALID_RMS} sd; "
        f"{concurrency(rows)}.", "",
        *per_target(rows, targets), "", "Summary over the counted targets:", "",
        *summary(rows)])


def write_docs(table: str, root: Path) -> Path:
    """Replace the text between :data:`BEGIN` and :data:`END` in
    ``docs/library/generalisation.md`` under ``root`` with ``table``.

    Raises:
        ValueError: where the page lacks the markers.
    """
    page = root / "docs" / "library" / "generalisation.md"
    text = page.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{page} has no {BEGIN} ... {END} markers to write the table into")
    head, rest = text.split(BEGIN, 1)
    page.write_text(f"{head}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}")
    return page
