"""Stopping a fit cleanly: SIGINT and SIGTERM ask it to stop at its next checkpoint, and a fit
whose parent (the workflow) dies gets SIGTERM, so it never runs on alone.

The runners ask :class:`StopRequest` at every checkpoint; ``advi_repro.runners.run.execute`` then
keeps
what the run has (``seed<k>.partial``) and raises :class:`Interrupted`, whose ``exit_code``
(128 + the signal's number: 130 for SIGINT, 143 for SIGTERM) ``scripts/fit.py`` exits with.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class StopRequest:
    """Whether a stop was asked for: ``stop()`` is None, or the reason (``interrupted by
    SIGINT``)."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self) -> str | None:
        if self.signum is None:
            return None
        return f"interrupted by {signal.Signals(self.signum).name}"


class Interrupted(Exception):
    """A run stopped at a checkpoint on a signal; ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


@contextmanager
def stop_on_signals(signums: Sequence[int] = (signal.SIGINT, signal.SIGTERM)
                    ) -> Iterator[StopRequest]:
    """Within the block, the first of ``signums`` sets the yielded :class:`StopRequest`
    (and is logged) instead of stopping the process. After it, SIGINT acts as it would
    without the block (a second Ctrl-C: KeyboardInterrupt at once); other signals are
    ignored, since the parent-death signal comes once per thread of a dying parent
    (:func:`die_with_parent`). Outside the main thread, where handlers cannot be set, the
    request is never set. The old handlers are restored at the end."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous = {signum: signal.getsignal(signum) for signum in signums}

    def handle(signum: int, frame: FrameType | None) -> None:
        if request.signum is not None:
            return
        request.signum = signum
        if signal.SIGINT in previous:
            signal.signal(signal.SIGINT, previous[signal.SIGINT])
        logger.warning("%s received: stopping at the next checkpoint and keeping the run so "
                       "far (Ctrl-C again stops at once)", signal.Signals(signum).name)

    for signum in signums:
        signal.signal(signum, handle)
    try:
        yield request
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Asks the kernel to send ``signum`` to this process when its parent dies (Linux's
    ``prctl(PR_SET_PDEATHSIG)``); sends it at once if the parent is already gone.

    Returns:
        False where the call is not available (not Linux), True otherwise.
    """
    parent = os.getppid()
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    if prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)
    return True
