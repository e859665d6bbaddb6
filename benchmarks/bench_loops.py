"""What a loop's control flow costs one ADVI step: the same step in loops of different shape.

A step here is ADVI's core at M = 1 on an experiment's unconstrained log density (the
target of ``advi.from_numpyro``): one draw zeta = mu + exp(omega) * eps, the gradient of
log p there, the mean-field gradient of paper Eq. 6 and a small SGD update (steps clipped,
so that 50 of them stay finite from any start). The step is run ``--steps`` times in a
jitted loop of each shape below, and the median seconds of a loop over ``--repeats`` runs
are printed per step, with the ratio to the plain loop:

- ``fori``: ``jax.lax.fori_loop`` over a trip count known when compiling;
- ``while``: ``jax.lax.while_loop`` to a count given at run time (``advi.fit``'s chunk);
- ``blocks``: blocks of 10 known trips inside a ``while_loop`` to the run-time count;
- ``while, data carried``: the ``while`` loop with the data read by
  ``advi.loops.loop_data`` (as ``advi.fit``'s chunk and the Laplace start's search read
  it): its narrow leaves (E3's bool mask) through a barrier on every trip, so that XLA
  hoists nothing computed from them out of the loop;
- each again with the draw computed once before the log density reads it
  (``advi.families.computed_once``, as the library's steps do: without it XLA can fuse the
  draw's computation into the log density's loops and recompute it there, once per
  observation of a hierarchical model's gather), and with every gradient inside a
  ``while_loop`` that redraws a non-finite draw (the shape of ``advi.elbo``'s redraw
  loop: its condition is tested before the first trip and after it).

On a GPU, XLA tests a ``while_loop``'s condition on the host on every trip unless it knows
the trip count, so each such test costs a round trip; a CPU runs every shape alike.

A second table times the compiled Laplace start's step without its line search, in a
``fori`` loop: the gradient of log p alone, then with L-BFGS's direction (memory
``advi.lbfgs.LBFGS_MEMORY``) by ``optax.scale_by_lbfgs``'s two-loop recursion and by
``advi.lbfgs_compact`` (what ``advi.lbfgs.mode_search`` uses).

    python benchmarks/bench_loops.py                           # E3 at paper size
    python benchmarks/bench_loops.py --experiment linreg_ard --scale smoke
    python benchmarks/bench_loops.py --experiment election88     # E2: draws fused or not

benchmarks/README.md ("On a GPU, the third time") records what it printed on an H200.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import bench_common as common
import numpy as np

BLOCK = 10
"""Known trips per block of the ``blocks`` loops."""
STEP = 1e-7
"""The SGD step on the clipped gradient: a loop of steps barely moves q."""
CLIP = 1e3
"""Each gradient coordinate is clipped to [-CLIP, CLIP]."""
MAX_REDRAWS = 10


def make_steps(log_density: Callable[[Any, Any], Any], dim: int
               ) -> dict[str, Callable[..., Any]]:
    """The loops of the module docstring, by name: each ``(state, key, num_steps, data) ->
    state`` with ``state`` = (mu (K,), omega (K,)); ``num_steps`` a () int32 that the
    run-time loops read and the ``fori`` loops ignore (they run ``num_steps`` as known when
    built, :func:`loops`)."""
    import jax
    import jax.numpy as jnp

    from advi.families import computed_once

    grad = jax.grad(log_density)

    def gradient(mu: Any, omega: Any, key: Any, data: Any, once: bool = False
                 ) -> tuple[Any, Any]:
        eps = jax.random.normal(key, (dim,), mu.dtype)
        zeta = mu + jnp.exp(omega) * eps
        g = grad(computed_once(zeta) if once else zeta, data)
        return g, g * eps * jnp.exp(omega) + 1.0

    def once(mu: Any, omega: Any, key: Any, data: Any) -> tuple[Any, Any]:
        return gradient(mu, omega, key, data, once=True)

    def redrawing(mu: Any, omega: Any, key: Any, data: Any) -> tuple[Any, Any]:
        def body(c: tuple) -> tuple:
            k, _, _, _, n = c
            k, sub = jax.random.split(k)
            g_mu, g_omega = gradient(mu, omega, sub, data)
            return k, g_mu, g_omega, ~jnp.all(jnp.isfinite(g_mu)), n + 1

        zeros = jnp.zeros_like(mu)
        start = (key, zeros, zeros, jnp.array(True), 0)
        out = jax.lax.while_loop(lambda c: c[3] & (c[4] < MAX_REDRAWS), body, start)
        return out[1], out[2]

    return {"plain": gradient, "computed once": once, "redraw": redrawing}


def loops(gradient: Callable[..., Any], known_steps: int) -> dict[str, Callable[..., Any]]:
    """``fori`` (``known_steps`` trips), ``while`` and ``blocks`` loops of SGD steps with
    ``gradient(mu, omega, key, data) -> (g_mu, g_omega)``."""
    import jax
    import jax.numpy as jnp

    from advi.loops import loop_data

    def update(s: tuple, i: Any, key: Any, data: Any) -> tuple:
        g_mu, g_omega = gradient(*s, jax.random.fold_in(key, i), data)
        return (s[0] + STEP * jnp.clip(g_mu, -CLIP, CLIP),
                s[1] + STEP * jnp.clip(g_omega, -CLIP, CLIP))

    def fori(s: tuple, key: Any, n: Any, data: Any) -> tuple:
        return jax.lax.fori_loop(0, known_steps, lambda i, s: update(s, i, key, data), s)

    def while_(s: tuple, key: Any, n: Any, data: Any) -> tuple:
        return jax.lax.while_loop(lambda c: c[0] < n,
                                  lambda c: (c[0] + 1, update(c[1], c[0], key, data)),
                                  (0, s))[1]

    def blocks(s: tuple, key: Any, n: Any, data: Any) -> tuple:
        def block(c: tuple) -> tuple:
            k, s = c

            def one(i: Any, s: tuple) -> tuple:
                new = update(s, k + i, key, data)
                return jax.tree.map(lambda a, b: jnp.where(k + i < n, a, b), new, s)

            return k + BLOCK, jax.lax.fori_loop(0, BLOCK, one, s)

        return jax.lax.while_loop(lambda c: c[0] < n, block, (0, s))[1]

    def carried(s: tuple, key: Any, n: Any, data: Any) -> tuple:
        held, read = loop_data(data)

        def body(c: tuple) -> tuple:
            k, s, h = c
            d, h = read(h)
            return k + 1, update(s, k, key, d), h

        return jax.lax.while_loop(lambda c: c[0] < n, body, (0, s, held))[1]

    return {"fori": fori, "while": while_, "blocks": blocks, "while, data carried": carried}


def direction_loops(log_density: Callable[[Any, Any], Any], known_steps: int
                    ) -> dict[str, Callable[..., Any]]:
    """The second table's loops, by name: each ``((u,), key, num_steps, data) -> (u,)``
    runs ``known_steps`` clipped steps along the gradient of -log p at u (K,), or along
    L-BFGS's direction from it (``key`` and ``num_steps`` unused)."""
    import jax
    import jax.numpy as jnp
    import optax

    from advi.lbfgs import LBFGS_MEMORY
    from advi.lbfgs_compact import scale_by_compact_lbfgs

    grad = jax.grad(lambda u, data: -log_density(u, data))

    def loop(transform: Any) -> Callable[..., Any]:
        def run(state: tuple, key: Any, n: Any, data: Any) -> tuple:
            def step(i: Any, c: tuple) -> tuple:
                u, memory = c
                g = grad(u, data)
                d, memory = (g, memory) if transform is None else transform.update(
                    g, memory, u)
                return u - STEP * jnp.clip(d, -CLIP, CLIP), memory

            u = state[0]
            memory = None if transform is None else transform.init(u)
            return (jax.lax.fori_loop(0, known_steps, step, (u, memory))[0],)

        return run

    return {"gradient": loop(None),
            "gradient + optax two-loop": loop(optax.scale_by_lbfgs(LBFGS_MEMORY)),
            "gradient + compact form": loop(scale_by_compact_lbfgs(LBFGS_MEMORY))}


def time_loop(loop: Callable[..., Any], state: tuple, num_steps: int, data: Any,
              repeats: int, clock: Callable[[], float] = time.perf_counter
              ) -> tuple[float, bool]:
    """(median seconds per step over ``repeats`` runs of the compiled ``loop``, whether the
    state stayed finite); compiled and run once first."""
    import jax

    key, n = jax.random.PRNGKey(0), np.int32(num_steps)
    compiled = jax.jit(loop).lower(state, key, n, data).compile()
    state = jax.block_until_ready(compiled(state, key, n, data))
    times = []
    for _ in range(repeats):
        start = clock()
        state = jax.block_until_ready(compiled(state, key, n, data))
        times.append(clock() - start)
    finite = all(bool(np.all(np.isfinite(np.asarray(x)))) for x in state)
    return float(np.median(times)) / num_steps, finite


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--experiment", default="gamma_poisson_nmf",
                        help="an experiment of conf/experiment (default gamma_poisson_nmf)")
    parser.add_argument("--scale", default="paper", choices=("paper", "smoke"))
    parser.add_argument("--steps", type=int, default=50, help="steps per loop (default 50)")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs (default 10)")
    parser.add_argument("--results-dir", default=str(common.ROOT / "results"),
                        help="where the experiment's data are made or read")
    args = parser.parse_args(argv)
    if args.steps < BLOCK or args.steps % BLOCK or args.repeats < 1:
        parser.error(f"--steps must be a positive multiple of {BLOCK} (got {args.steps}) "
                     f"and --repeats at least 1 (got {args.repeats})")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_arguments(argv)
    import jax
    import jax.numpy as jnp
    from bench_peers import load_setup

    import advi

    print("# Loop shapes")
    common.print_environment()
    setup = load_setup(args.experiment, args.scale, 0, args.results_dir)
    target = advi.from_numpyro(setup.model, model_kwargs=setup.train)
    state = (jnp.zeros(target.dim), jnp.full(target.dim, -2.0))
    grad = jax.grad(target.full_log_density_fn)
    print(f"\n{args.experiment} ({args.scale}): K = {target.dim}, {args.steps} steps a loop\n")
    def single(s: tuple, key: Any, n: Any, data: Any) -> tuple:
        return s[0] + STEP * jnp.clip(grad(s[0], data), -CLIP, CLIP), s[1]

    floor = time_loop(single, state, 1, target.data, 10 * args.repeats)[0]
    print(f"one jitted gradient of log p, no loop: {1e3 * floor:.4f} ms\n")
    print("| loop | gradient | ms per step | x fori, plain |\n| --- | --- | ---: | ---: |")
    base = None
    for kind, gradient in make_steps(target.full_log_density_fn, target.dim).items():
        for shape, loop in loops(gradient, args.steps).items():
            seconds, finite = time_loop(loop, state, args.steps, target.data, args.repeats)
            base = seconds if base is None else base
            note = "" if finite else " (the state went non-finite)"
            print(f"| {shape} | {kind} | {1e3 * seconds:.4f}{note} | {seconds / base:.2f} |",
                  flush=True)
    print("\n| L-BFGS step, no line search | ms per step | x gradient |\n| --- | ---: | ---: |")
    base = None
    for kind, loop in direction_loops(target.full_log_density_fn, args.steps).items():
        seconds, _ = time_loop(loop, (jnp.zeros(target.dim),), args.steps, target.data,
                               args.repeats)
        base = seconds if base is None else base
        print(f"| {kind} | {1e3 * seconds:.4f} | {seconds / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
