"""XLA compile options for the functions ``advi`` compiles: compile fast where it costs no
run time.

Four levers, measured on 2 CPU cores with JAX 0.10 (``benchmarks/bench_advi.py``); a GPU
keeps XLA's defaults:

- XLA's CPU backend has two code generators for fused loops: the newer MLIR "fusion
  emitters" (the default) and the older elemental LLVM emitters
  (``xla_cpu_use_fusion_emitters=False``). The older ones compile 30-45% faster (the
  iteration chunk: E1 1.10 -> 0.73 s, the mixture of Figure 1 1.56 -> 1.07 s, eight
  schools 0.68 -> 0.37 s) and run as fast (E1, mixture, eight schools; within 3%), except
  where the program scatters: the older backend expands a scatter (the gradient of an
  indexed gather) into a serial loop, and election88's iterations ran 2.1x slower. So the
  older emitters are used for every program without a scatter, and for those a fit calls
  a bounded number of times whatever they hold (:func:`compile_options`).
  The Poisson factorisation's robust iterations ran 17% slower with them (0.37 -> 0.43
  ms), its Stan ones as fast.
- Functions called many times (the iteration chunk, the ELBO, the log density's gradient
  for L-BFGS, the sampler) compile at LLVM optimisation level 1 instead of 2
  (:data:`HOT`): 15-25% less compile time (E1's chunk 0.73 -> 0.61 s), iterations within
  5% (E1 +3%, the factorisation +5%, the mixture and eight schools as fast, election88 as
  fast).
- The functions :func:`advi.fit` compiles together, each in a thread of its own, compile
  with XLA's own parallel code generation off (:data:`ONE_THREAD`): with the cores already
  busy with the other compilations, splitting each module only adds work. Compiled alone
  on 2 cores, E1's chunk took 1.47 CPU-seconds instead of 1.88 and its Hessian 0.62-0.81
  instead of 0.94, at the same wall time and speed; the whole compile phase of a robust
  fit of E1 (fresh processes, 6 each) 2.36 -> 2.09 s median wall, 4.0 -> 3.55 CPU-s.
- Functions called once per fit (the start) compile without LLVM's optimisation passes
  (:data:`ONCE`). The Laplace start's Hessian, called three times or more, compiles as a
  "bounded" function: on E1 its call took 0.18-0.23 s at :data:`ONCE` and 0.10 s at
  :data:`HOT`, for 0.2 s more of compilation on another thread.
"""

from __future__ import annotations

from typing import Any

import jax

ONCE = {"xla_backend_optimization_level": 0}
"""XLA options for the functions a fit calls once (init, begin): LLVM without optimisation
compiles them in 40-60% less CPU time (E1, JAX 0.10: init 1.1 -> 0.4 s); not for the hot
loop (E1's chunk ran 2.3x slower without it)."""

HOT = {"xla_backend_optimization_level": 1}
"""XLA options for the functions a fit calls many times (module docstring)."""

OLDER_EMITTERS = {"xla_cpu_use_fusion_emitters": False}
"""XLA's CPU option selecting the elemental LLVM emitters over the MLIR fusion emitters."""


ONE_THREAD = {"xla_cpu_parallel_codegen_split_count": 1}
"""XLA's CPU option for compiling a module in one piece, on one thread (module docstring)."""

CALLS = ("once", "bounded", "many")
"""How often a fit calls a function, for :func:`compile_options`."""


def compile_options(lowered: Any | None = None, *, calls: str = "many",
                    alongside: bool = False) -> dict[str, Any]:
    """The options for ``lowered.compile(...)`` (or ``jax.jit(..., compiler_options=...)``).

    Args:
        lowered: a ``jax.stages.Lowered``; None when the program is known not to scatter
            (e.g. drawing from q and mapping the draws to the constrained space).
        calls: "once" (once per fit: the start; :data:`ONCE`), "bounded" (a bounded
            number of times: the L-BFGS's value and gradient, at most ~1,000 steps, and the
            Hessian; :data:`HOT`) or "many" (the iteration chunk, the ELBO;
            :data:`HOT`).
        alongside: compiled at the same time as others, each in its own thread (as
            :func:`advi.fit` compiles its functions): adds :data:`ONE_THREAD`.

    Returns:
        a new dict: empty unless JAX's default backend is the CPU; there :data:`ONCE` or
        :data:`HOT`, plus :data:`OLDER_EMITTERS` unless ``calls`` is "many" and the program
        has a scatter (measured on election88: its Hessian compiles in 0.41 s instead of
        0.85 and runs as fast with the older emitters, its value and gradient in 0.36 s
        instead of 0.56 and 0.38 ms a call instead of 0.32, while its iteration chunk ran
        2.1x slower).

    Raises:
        ValueError: ``calls`` is not one of :data:`CALLS`.
    """
    if calls not in CALLS:
        raise ValueError(f"calls={calls!r} is not one of {CALLS}")
    if jax.default_backend() != "cpu":
        return {}
    options: dict[str, Any] = dict(ONCE if calls == "once" else HOT)
    if calls != "many" or lowered is None or not scatters(lowered):
        options.update(OLDER_EMITTERS)
    if alongside:
        options.update(ONE_THREAD)
    return options


def scatters(lowered: Any) -> bool:
    """Whether a lowered program contains a scatter (StableHLO ``scatter``)."""
    return "stablehlo.scatter" in lowered.as_text()
