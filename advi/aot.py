"""Compiling jitted functions ahead of time, through JAX's public AOT API
(``jax.jit(f).lower(*args).compile()``, XLA's default options), so that a caller can time
the compilation apart from the run (:mod:`advi.compiled`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def aot(jitted: Any, *args: Any) -> Callable:
    """``jitted`` compiled for arguments like ``args`` (arrays or ``jax.ShapeDtypeStruct``),
    with XLA's default options: ``jitted.lower(*args).compile()``."""
    return jitted.lower(*args).compile()


class Lazy:
    """A jitted function compiled ahead of time on its first call (for the arguments of that
    call), unless given ``compiled``; ``compiler(jitted, *args) -> compiled`` does it (by
    default :func:`aot`)."""

    def __init__(self, jitted: Any, compiler: Callable[..., Callable] = aot) -> None:
        self.jitted = jitted
        self.compiler = compiler
        self.compiled: Callable | None = None

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None:
            self.compiled = self.compiler(self.jitted, *args)
        return self.compiled(*args)
