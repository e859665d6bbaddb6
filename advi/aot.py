"""Compiling jitted functions ahead of time, through JAX's public AOT API
(``jax.jit(f).lower(*args).compile()``, XLA's default options), so that a caller can time
the compilation apart from the run (:mod:`advi.compiled`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def aot(jitted: Any, *args: Any) -> Callable:
    """``jitted`` compiled for arguments like ``args`` (arrays or ``jax.ShapeDtypeStruct``),
    with XLA's default options: ``jitted.lower(*args).compile()``."""
    return jitted.lower(*args).compile()


class Lazy:
    """A jitted function compiled ahead of time on its first call (for the arguments of that
    call), unless given ``compiled``; ``compiler(jitted, *args) -> compiled`` does it (by
    default :func:`aot`). ``seconds`` is the time that compilation took on ``clock``
    (``time.perf_counter`` unless set; 0 until then), so that a caller whose clock ran
    across the first call can take it off (:func:`advi.driver.drive`)."""

    def __init__(self, jitted: Any, compiler: Callable[..., Callable] = aot) -> None:
        self.jitted = jitted
        self.compiler = compiler
        self.compiled: Callable | None = None
        self.clock: Callable[[], float] = time.perf_counter
        self.seconds = 0.0

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None:
            start = self.clock()
            self.compiled = self.compiler(self.jitted, *args)
            self.seconds = self.clock() - start
        return self.compiled(*args)
