"""Validation of model hyperparameters, with messages that name the bad value."""

from __future__ import annotations


def require_positive(**values: float) -> None:
    """Raise ValueError naming each keyword whose value is not > 0."""
    bad = {name: value for name, value in values.items() if not value > 0}
    if bad:
        raise ValueError(f"hyperparameters must be > 0, got {bad}")


def require_count(**values: int) -> None:
    """Raise ValueError naming each keyword whose value is not an integer >= 1."""
    bad = {name: value for name, value in values.items() if int(value) != value or value < 1}
    if bad:
        raise ValueError(f"sizes must be integers >= 1, got {bad}")
