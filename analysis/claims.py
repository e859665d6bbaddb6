"""The criteria of the reproduction table (:mod:`advi_repro.analysis.reproduction`): for
each claim of the paper (its experiments, numbered E0 to E6 here: Figures 3, 4a, 4b, 5a/5c,
5b/5d, 1a, 1b), what a run measured and whether the claim held there.

Pure functions over the per-experiment summary tables
(:func:`advi_repro.analysis.summary.summary_table`,
as ``scripts/summarise.py`` writes them) and the Figure 3 fit table
(:func:`advi_repro.analysis.transformation.transformation_table`); ``scripts/claims.py`` reads the
files and writes ``claims.csv``. Each claim is judged by a stated criterion
(:data:`CLAIMS`), so that "held" means the same thing in every run:

- E0: the fitted q is the KL-optimal Gaussian in zeta = log lambda, to within
  ``max_excess_kl`` nats of the minimum KL(q || p) (exact: the posterior is a Gamma).
- E1, E2: every method's final heldout_lpd is within the tolerance of the reference's
  (NUTS's), and an ADVI method is the first to come within it; E1 also: M = 1 gets there
  before M = 10.
- E3, E4: ADVI comes within the tolerance of NUTS's final heldout_lpd at least 10 times
  sooner than NUTS itself; E5: at least 100 times (orders of magnitude). Where ADVI ends
  more than the tolerance above NUTS (NUTS stuck short of it: E4, E5), the verdict reads
  the race the other way too, beside the speed-up: whether NUTS came within the tolerance
  of ADVI's final value before its runs ended, and when; the criterion stays the speed-up.
- E6: every minibatch size B >= 500 ends with a higher heldout_lpd than every B < 500.

Each experiment's YAML names the claim it tests (``claim_id``); an experiment that tests none
(a model of your own) gets a "no paper claim" row with its numbers, judged by nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from advi_repro.analysis.methods import advi_setting, is_robust
from advi_repro.analysis.paper_claims import CLAIMS, MAX_EXCESS_KL, MINIBATCH_THRESHOLD, SPEED_UP
from advi_repro.analysis.summary import reach_column, reverse_reach_column


class Verdict(NamedTuple):
    """Whether a claim held in this run.

    Attributes:
        held: True, False, or None where the run cannot tell (a method is missing).
        measured: the numbers it rests on, in words.
        reason: why it held or not, in one sentence.
    """

    held: bool | None
    measured: str
    reason: str


def check_claim_id(experiment: str, claim_id: str | None) -> None:
    """Checks that an experiment's ``claim_id`` names a claim an experiment can test.

    Raises:
        ValueError: it names none; the message gives the experiment, the value and the
            valid ids (E0 is Figure 3's, not an experiment's).
    """
    valid = [claim.id for claim in CLAIMS if claim.id != "E0"]
    if claim_id is not None and claim_id not in valid:
        raise ValueError(f"experiment {experiment!r}: claim_id {claim_id!r} is not a claim of "
                         f"the paper; valid: {', '.join(valid)}, or null for none")


# ---- E0: the transformation (Figure 3) ------------------------------------------------------


def judge_transformation(table: pd.DataFrame, *, max_excess_kl: float = MAX_EXCESS_KL) -> Verdict:
    """E0 from :func:`transformation_table`: does q reach the minimum KL over Gaussians?"""
    value = table.set_index("symbol")["value"]
    measured = (
        f"posterior Gamma({value['a']:g}, {value['b']:g}); q: mu = {value['mu']:.4f} "
        f"(KL-optimal {value['mu_opt']:.4f}), sigma = {value['sigma']:.4f} (KL-optimal "
        f"{value['sigma_opt']:.4f}); KL(q || p) = {value['kl']:.2g} nats, "
        f"{value['excess_kl']:.2g} above the minimum"
    )
    held = bool(value["excess_kl"] <= max_excess_kl)
    reason = (
        f"KL(q || p) is within {max_excess_kl:g} nats of its minimum" if held
        else f"KL(q || p) exceeds its minimum by {value['excess_kl']:.3g} nats "
             f"(allowed {max_excess_kl:g})"
    )
    return Verdict(held, measured, reason)


# ---- E1 to E6: accuracy against time ---------------------------------------------------------


def _seconds(value: float) -> str:
    return "never" if not np.isfinite(value) else f"{value:.3g} s"


def _finals(summary: pd.DataFrame) -> str:
    return ", ".join(f"{row.label} {row.final_heldout_lpd:.4g}" for row in summary.itertuples())


def _speed_up(slow: float, fast: float) -> float:
    """slow / fast seconds; inf when only ``fast`` is finite, NaN when it is not."""
    if not np.isfinite(fast):
        return float("nan")
    if not np.isfinite(slow):
        return float("inf")
    return slow / fast if fast > 0 else float("inf")


def mixed_setups(setups: Mapping[str, str | None] | None, methods: Iterable[str]) -> list[str]:
    """The distinct recorded timing set-ups of ``methods`` when there is more than one (their
    seconds cannot be compared), else an empty list; unrecorded set-ups are left out."""
    known = sorted({setups[m] for m in methods if (setups or {}).get(m) is not None})
    return known if len(known) > 1 else []


class _Times(NamedTuple):
    """What the criteria of E1 to E5 read from a summary table (methods as its index)."""

    table: pd.DataFrame
    seconds: pd.Series  # to within the tolerance of the reference's final value (inf: never)
    final: pd.Series  # final heldout_lpd
    advi: list[str]
    other: list[str]
    reference: str
    tolerance: float

    @property
    def percent(self) -> str:
        return f"{self.tolerance * 100:g}%"

    def label(self, method: str) -> str:
        return self.table.loc[method, "label"]


def judge_experiment(
    claim: str, summary: pd.DataFrame, *, reference: str | None, tolerance: float = 0.01,
    setups: Mapping[str, str | None] | None = None,
) -> Verdict:
    """Whether claim ``claim`` (E1 to E6) held in an experiment's summary table.

    A claim that compares seconds (every one but E6's) is "cannot tell" when the methods'
    ``setups`` (device, cores, CPU model) differ: their seconds are not comparable.

    Args:
        claim: the claim id.
        summary: :func:`advi_repro.analysis.summary.summary_table` (methods as rows; in its
            ``seconds_to_...`` column NaN where a method never came within ``tolerance`` of
            the reference's final heldout_lpd).
        reference: the summary's reference method (None: the summary has no times).
        tolerance: the summary's tolerance, a fraction.
        setups: per method, what its seconds were measured on (None: not recorded).
    """
    table = summary.set_index("method")
    seconds, parts = reach(summary, reference=reference, tolerance=tolerance)
    final = table["final_heldout_lpd"].astype(float)
    advi = [m for m in table.index if advi_setting(m) is not None]
    if claim == "E6":
        return _judge_minibatch(table, final, parts)
    if reference not in table.index or not advi:
        return Verdict(None, "; ".join(parts), f"cannot tell: no {reference or 'reference'} "
                       "run or no ADVI run in this experiment")
    mixed = mixed_setups(setups, table.index)
    if mixed:
        return Verdict(None, "; ".join(parts), "cannot tell: the methods' seconds were "
                       "measured on different set-ups (" + "; ".join(mixed) + ")")
    times = _Times(table, seconds, final, advi, [m for m in table.index if m not in advi],
                   reference, tolerance)
    if claim in SPEED_UP:
        return _judge_speed(times, parts, SPEED_UP[claim])
    return _judge_accuracy(times, parts, claim)


def reach(summary: pd.DataFrame, *, reference: str | None, tolerance: float
           ) -> tuple[pd.Series, list[str]]:
    """Per method (the summary's index), the seconds to within ``tolerance`` of the
    reference's final heldout_lpd (inf: never, or no reference), and what was measured in
    words: the final values and, where there is a reference, those seconds."""
    table = summary.set_index("method")
    column = reach_column(reference, tolerance) if reference is not None else None
    if column in table.columns:
        seconds = table[column].astype(float).fillna(np.inf)
    else:
        seconds = pd.Series(np.inf, index=table.index)
    parts = [f"final heldout_lpd: {_finals(summary)}"]
    if column in table.columns and reference in table.index:
        parts.append(f"seconds to within {tolerance * 100:g}% of "
                     f"{table.loc[reference, 'label']}'s final value: "
                     + ", ".join(f"{table.loc[m, 'label']} {_seconds(seconds[m])}"
                                 for m in table.index))
    return seconds, parts


def _fastest_advi(t: _Times, parts: list[str]) -> tuple[str, float, str]:
    """The ADVI run first within the tolerance, its speed-up over the reference and that
    speed-up in words, which it also appends to ``parts``."""
    fastest = min(t.advi, key=lambda m: t.seconds[m])
    speed_up = _speed_up(t.seconds[t.reference], t.seconds[fastest])
    if np.isfinite(speed_up):
        times = f"{speed_up:.3g}x"
    elif np.isnan(speed_up):
        times = f"none (no ADVI run came within {t.percent})"
    else:
        times = (f"unbounded ({t.label(t.reference)} never came within {t.percent} of its "
                 "final mean)")
    parts.append(f"speed-up of {t.label(fastest)} over {t.label(t.reference)}: {times}")
    return fastest, speed_up, times


def _judge_speed(t: _Times, parts: list[str], needed: float) -> Verdict:
    """E3 to E5: ADVI within the tolerance ``needed`` times sooner than the reference."""
    fastest, speed_up, times = _fastest_advi(t, parts)
    ref = t.label(t.reference)
    if not np.isfinite(t.seconds[fastest]):
        return Verdict(False, "; ".join(parts), f"no ADVI run came within {t.percent} of "
                       f"{ref}'s final value")
    held = bool(speed_up >= needed)
    beyond = _beyond_reference(t, parts)
    return Verdict(held, "; ".join(parts), f"ADVI was {times} faster than {ref}"
                   + ("" if held else f", not the {needed:g}x the claim needs") + beyond)


def _beyond_reference(t: _Times, parts: list[str]) -> str:
    """Where the best ADVI run ended more than the tolerance above the reference's final
    value, that in words, read both ways: the reference stopped short of it, and whether
    the reference came within the tolerance of its final value before the reference's runs
    ended (the summary's :func:`reverse_reach_column`; its seconds are also appended to
    ``parts``); "" where ADVI did not end above the reference, and no second reading where
    the summary does not record it."""
    best = max(t.advi, key=lambda m: t.final[m])
    ahead = t.final[best] - t.final[t.reference]
    if not ahead > t.tolerance * abs(t.final[t.reference]):
        return ""
    ref, label = t.label(t.reference), t.label(best)
    text = (f"; {label} ended {ahead:.3g} nats above {ref}'s final value (more than "
            f"{t.percent}): {ref} stopped short of it")
    column = reverse_reach_column(t.reference, t.tolerance)
    if column not in t.table.columns:
        return text
    reached = float(t.table.loc[best, column])
    ended = float(t.table.loc[t.reference, "final_wall_s"])
    parts.append(f"seconds for {ref} to within {t.percent} of {label}'s final value: "
                 f"{_seconds(reached)} ({ref}'s runs ended at {ended:.3g} s, {label}'s at "
                 f"{float(t.table.loc[best, 'final_wall_s']):.3g} s)")
    if not np.isfinite(reached):
        return (text + f", and did not come within {t.percent} of {label}'s final value "
                f"before its runs ended ({ended:.3g} s)")
    return text + (f" at the end, but came within {t.percent} of {label}'s final value "
                   f"after {reached:.3g} s")


def _judge_accuracy(t: _Times, parts: list[str], claim: str) -> Verdict:
    """E1, E2: every method within the tolerance of the reference, ADVI there first (E1:
    M = 1 before M = 10)."""
    fastest, _, _ = _fastest_advi(t, parts)
    measured, failures = "; ".join(parts), []
    limit = t.tolerance * abs(t.final[t.reference])
    off = [m for m in t.table.index if not abs(t.final[m] - t.final[t.reference]) <= limit]
    if off:
        failures.append(f"final heldout_lpd not within {t.percent} of "
                        f"{t.label(t.reference)}'s: " + ", ".join(t.label(m) for m in off))
    if not np.isfinite(t.seconds[fastest]) or (
            t.other and t.seconds[fastest] >= min(t.seconds[m] for m in t.other)):
        failures.append("ADVI was not the first method to come within " + t.percent)
    undecided = None
    if claim == "E1" and not any(is_robust(m) for m in t.advi):
        by_m = {advi_setting(m)[0]: m for m in t.advi if advi_setting(m)[1] is None}
        if 1 not in by_m or 10 not in by_m:
            undecided = "cannot tell whether M = 1 beats M = 10: needs runs of both"
        elif not (np.isfinite(t.seconds[by_m[1]])
                  and t.seconds[by_m[1]] < t.seconds[by_m[10]]):
            failures.append("M = 1 was not faster than M = 10")
    if failures:
        return Verdict(False, measured, "; ".join(failures))
    if undecided:
        return Verdict(None, measured, undecided)
    return Verdict(True, measured, "every part of the criterion held")


def _judge_minibatch(table: pd.DataFrame, final: pd.Series, parts: list[str]) -> Verdict:
    sizes = {m: setting[1] for m in table.index
             if (setting := advi_setting(m)) is not None and setting[1] is not None}
    large = [m for m, b in sizes.items() if b >= MINIBATCH_THRESHOLD]
    small = [m for m, b in sizes.items() if b < MINIBATCH_THRESHOLD]
    measured = "; ".join(parts)
    if not large or not small:
        return Verdict(None, measured, f"cannot tell: needs runs with B >= "
                       f"{MINIBATCH_THRESHOLD} and B < {MINIBATCH_THRESHOLD}")
    worst_large = min(large, key=lambda m: final[m])
    best_small = max(small, key=lambda m: final[m])
    held = bool(final[worst_large] > final[best_small])
    finals = final[list(sizes)]
    reason = (f"the worst B >= {MINIBATCH_THRESHOLD} ({table.loc[worst_large, 'label']}, "
              f"{final[worst_large]:.4g}) " + ("beat" if held else "did not beat")
              + f" the best smaller B ({table.loc[best_small, 'label']}, "
              f"{final[best_small]:.4g}); the final values of all B span "
              f"{finals.max() - finals.min():.3g} nats")
    return Verdict(held, measured, reason)


# ---- the table ---------------------------------------------------------------------------------
