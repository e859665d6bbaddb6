"""Which ADVI a method of the workflow is, read from its run name (``advi_M1``,
``advi_robust_M1``, ``advi_fullrank_M1_B500_eta0.1``; :mod:`advi_repro.planning.naming`),
and the summary as each ADVI algorithm sees a claim."""

from __future__ import annotations

import pandas as pd

from advi_repro.planning.naming import RunName, parse_run_name


def advi_setting(method: str) -> tuple[int, int | None] | None:
    """(M, B) of an ADVI method name (``advi_M1``, ``advi_M10_B500``), None for others."""
    name = parsed(method)
    return (name.grad_samples, name.minibatch_size) if name is not None and name.is_advi \
        else None


def parsed(method: str) -> RunName | None:
    """The parts of a method's run name; None for a name no run of this workflow has."""
    try:
        return parse_run_name(method)
    except ValueError:
        return None


def is_robust(method: str) -> bool:
    """Whether a method name is ADVI with the library's robust preset (``advi_robust_M1``)."""
    name = parsed(method)
    return name is not None and name.is_robust


def advi_variants(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The summary as each ADVI algorithm sees the claim: ``("", rows without robust ADVI)``
    (Stan's ADVI, the paper's) and, when robust ADVI ran, ``(" (ADVI robust)", rows without
    Stan's ADVI)``; the other methods are in both."""
    methods = summary["method"]
    robust = methods.map(is_robust)
    if not robust.any():
        return [("", summary)]
    stan = methods.map(lambda m: advi_setting(m) is not None) & ~robust
    return [("", summary[~robust]), (" (ADVI robust)", summary[~stan])]
