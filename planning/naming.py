"""Run names: the one place that builds a method's folder name from its settings and reads
the settings back from a name.

A name is its parts joined by ``_``: ``advi[_<preset>][_<family>]_M<M>[_B<B>][_<extra>...]``
for ADVI (``advi_M1``, ``advi_M10_B500``, ``advi_robust_M1``, ``advi_fullrank_M1_eta0.1``)
and ``nuts`` or ``hmc`` plus extras for MCMC (``hmc_init-advi``, ``nuts_dense``). The
preset ``stan`` (the paper's algorithm) and the family ``meanfield`` are the defaults and
are left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

FAMILIES = ("meanfield", "fullrank")
"""ADVI's Gaussian families; the first is the default, left out of names."""
DEFAULT_PRESET = "stan"
"""ADVI's default preset (the paper's algorithm), left out of names."""
MCMC_METHODS = ("nuts", "hmc")


class RunName(NamedTuple):
    """A run name's parts.

    Attributes:
        method: ``advi``, ``nuts`` or ``hmc``.
        preset: ADVI's preset (``stan``, ``robust``); None for MCMC.
        family: ADVI's family; None for MCMC.
        grad_samples: ADVI's M; None for MCMC.
        minibatch_size: ADVI's B, None without minibatches (and for MCMC).
        extras: the other settings the name records (``eta0.1``, ``init-advi``, ``dense``).
    """

    method: str
    preset: str | None = None
    family: str | None = None
    grad_samples: int | None = None
    minibatch_size: int | None = None
    extras: tuple[str, ...] = ()

    @property
    def is_advi(self) -> bool:
        return self.method == "advi"

    @property
    def is_robust(self) -> bool:
        """ADVI with the library's robust preset."""
        return self.preset == "robust"


def advi_run_name(*, preset: str, family: str, grad_samples: int,
                  minibatch_size: int | None = None, extras: Sequence[str] = ()) -> str:
    """An ADVI run's name, e.g. ``advi_robust_M1`` or ``advi_M1_B500``.

    Raises:
        ValueError: an extra that would make the name ambiguous (empty, or with ``_``).
    """
    parts = ["advi"] + ([preset] if preset != DEFAULT_PRESET else [])
    parts += [family] if family != FAMILIES[0] else []
    parts.append(f"M{grad_samples}")
    parts += [f"B{minibatch_size}"] if minibatch_size is not None else []
    return "_".join(parts + _checked(extras))


def mcmc_run_name(method: str, extras: Sequence[str] = ()) -> str:
    """An MCMC run's name, e.g. ``nuts``, ``hmc_init-advi``.

    Raises:
        ValueError: an unknown method, or an extra with ``_``.
    """
    if method not in MCMC_METHODS:
        raise ValueError(f"method {method!r}: must be one of {MCMC_METHODS}")
    return "_".join([method, *_checked(extras)])


def _checked(extras: Sequence[str]) -> list[str]:
    for extra in extras:
        if not extra or "_" in extra:
            raise ValueError(f"name part {extra!r}: must be non-empty and without '_'")
    return list(extras)


def parse_run_name(name: str) -> RunName:
    """The parts of a run name built by :func:`advi_run_name` or :func:`mcmc_run_name`.

    Raises:
        ValueError: a name neither could have built, naming it.
    """
    method, *parts = name.split("_")
    if method in MCMC_METHODS:
        return RunName(method, extras=tuple(parts))
    if method != "advi":
        raise ValueError(f"run name {name!r}: must start with advi, nuts or hmc")
    m = next((i for i, p in enumerate(parts) if re.fullmatch(r"M\d+", p)), None)
    if m is None or m > 2:
        raise ValueError(f"run name {name!r}: an ADVI name has M<grad_samples> after its "
                         "optional preset and family")
    head, rest = parts[:m], parts[m + 1:]
    family = head.pop() if head and head[-1] in FAMILIES else FAMILIES[0]
    preset = head.pop() if head else DEFAULT_PRESET
    if head:
        raise ValueError(f"run name {name!r}: unexpected {head} before M")
    batch = int(rest.pop(0)[1:]) if rest and re.fullmatch(r"B\d+", rest[0]) else None
    return RunName("advi", preset, family, int(parts[m][1:]), batch, tuple(rest))
