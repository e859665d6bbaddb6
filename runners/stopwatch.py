"""A stopwatch that counts only the time spent inside ``running()`` blocks.

The timing protocol (docs/protocol.md): every method runs in chunks; the clock runs during a chunk
and stops between chunks while held-out accuracy is scored and the trace is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Stopwatch:
    """Accumulated seconds of the ``running()`` blocks only.

    Work dispatched asynchronously (JAX) must be waited for inside the block
    (``jax.block_until_ready``), or it is counted where it is waited for.

    Args:
        clock: ``() -> seconds`` on a monotonic scale; ``time.perf_counter`` unless a test
            injects a fake one.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._elapsed_s = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        """Runs the clock for the duration of the block."""
        start = self._clock()
        try:
            yield
        finally:
            self._elapsed_s += self._clock() - start

    def add(self, seconds: float) -> None:
        """Counts ``seconds`` timed elsewhere (e.g. an initialising fit's optimisation
        seconds, which exclude its compilation)."""
        if not seconds >= 0:
            raise ValueError(f"seconds = {seconds!r}: must be >= 0")
        self._elapsed_s += seconds

    @property
    def elapsed_s(self) -> float:
        """Seconds counted so far."""
        return self._elapsed_s
