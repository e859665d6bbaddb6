"""Value checks of the structured configs: each names the field, its value and what is
valid, before any data is read."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from omegaconf import MISSING


def check(obj: object, name: str, ok: Callable[[Any], bool], requirement: str) -> None:
    """Raises ValueError naming ``obj.name`` and its value unless ``ok(value)``.

    MISSING values are left to OmegaConf, which reports them when they are read.
    """
    value = getattr(obj, name)
    if value != MISSING and not ok(value):
        raise ValueError(f"{type(obj).__name__}.{name} = {value!r}: must be {requirement}")


def positive(value: float) -> bool:
    """Whether ``value`` is a finite number above 0."""
    return math.isfinite(value) and value > 0
