"""Speed of ADVI on ARD linear regression (N = 10,000 rows, D = 250 regressors).

Measures, in one run (see benchmarks/README.md):

(a) ADVI seconds per iteration / seconds of one jitted gradient of the log joint in
    zeta-space at M draws at once (``jax.jit(jax.vmap(jax.grad(log_density)))``), M = 1, 10;
    target <= 1.3. ADVI's iteration cost is measured twice: the library's compiled chunk
    alone (pure iteration cost), and the library's main loop with Stan's 100-draw ELBO
    evaluation every 100 iterations.
(b) ADVI seconds per iteration / NumPyro SVI's (``AutoDiagonalNormal``,
    ``Trace_ELBO(num_particles=M)``, jitted ``svi.update`` inside a ``lax.fori_loop``);
    target < 1.0.
(c) time to a result from ``advi.fit`` called cold in a fresh subprocess (compile, eta search,
    optimisation to convergence, 1,000 draws); target < 3 s (Stan's ADVI: 4.9-8.4 s). NumPyro
    SVI's compile time in a fresh subprocess for comparison.

All steady-state timings are taken after compilation, interleaving the methods repeat by
repeat; medians are reported.

    python benchmarks/bench_advi.py            # about 1-2 minutes on 2 CPU cores
    python benchmarks/bench_advi.py --quick    # fewer iterations and repeats
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # models/ and datasets/ of this checkout
    sys.path.insert(0, str(ROOT))

TARGET_GRAD_RATIO = 1.3
TARGET_SVI_RATIO = 1.0
TARGET_COLD_S = 3.0
STAN_COLD_S = "4.9-8.4"
ETA = 0.1
EVAL_ELBO = 100


# ----------------------------------------------------------------------------------------
# Problem: the ARD regression model and its simulated data
# ----------------------------------------------------------------------------------------


def _inline_model(X: Any, y: Any) -> None:
    """y_n ~ N(w^T x_n, 1/tau), w_d ~ N(0, 1/sqrt(tau alpha_d)) (sd), tau, alpha_d ~ Gamma(1, 1)."""
    import jax
    import numpyro
    import numpyro.distributions as dist

    tau = numpyro.sample("tau", dist.Gamma(1.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Gamma(1.0, 1.0).expand([X.shape[1]]).to_event(1))
    w = numpyro.sample("w", dist.Normal(0.0, jax.lax.rsqrt(tau * alpha)).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("y", dist.Normal(X @ w, jax.lax.rsqrt(tau)), obs=y)


def _inline_simulate(seed: int, num_train: int, num_features: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    w = np.zeros(num_features)
    w[: num_features // 2] = rng.normal(0.0, 1.0, num_features // 2)
    X = rng.normal(0.0, 1.0, (num_train, num_features))
    y = X @ w + rng.normal(0.0, 1.0, num_train)
    return {"X_train": X.astype(np.float32), "y_train": y.astype(np.float32)}


def load_problem(seed: int, num_train: int, num_features: int) -> tuple[Any, dict, str]:
    """``(model, data_kwargs, provenance)``: the checkout's model and simulator if present."""
    import jax.numpy as jnp

    try:
        model = importlib.import_module("models.linreg_ard").model
        model_src = "models.linreg_ard.model"
    except (ImportError, AttributeError):
        model, model_src = _inline_model, "inline model"
    try:
        simulate = importlib.import_module("datasets.simulate").linreg_ard
        arrays = simulate(seed, num_train=num_train, num_features=num_features)
        data_src = "datasets.simulate.linreg_ard"
    except (ImportError, AttributeError, TypeError):
        arrays = _inline_simulate(seed, num_train, num_features)
        data_src = "inline simulation"
    data = {"X": jnp.asarray(arrays["X_train"]), "y": jnp.asarray(arrays["y_train"])}
    return model, data, f"{model_src}, {data_src} (seed {seed})"


# ----------------------------------------------------------------------------------------
# Timed callables, each ``f(num_iterations) -> seconds``, compiled before timing
# ----------------------------------------------------------------------------------------


def make_grad_timer(target: Any, M: int) -> Any:
    """One jitted ``vmap(grad(log_density))`` call at M draws, dispatched per call."""
    import jax

    key = jax.random.PRNGKey(1)
    grad = jax.jit(jax.vmap(jax.grad(lambda z: target.log_density(z, key))))
    zeta = 0.1 * jax.random.normal(jax.random.PRNGKey(2), (M, target.dim))
    jax.block_until_ready(grad(zeta))

    def timed(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            out = grad(zeta)
        jax.block_until_ready(out)
        return time.perf_counter() - start

    return timed


def make_grad_loop_timer(target: Any, M: int) -> Any:
    """The same gradient n times inside one compiled ``fori_loop`` (no dispatch cost); each
    gradient feeds the next point so that XLA cannot hoist it out of the loop."""
    import jax

    key = jax.random.PRNGKey(1)
    grad = jax.vmap(jax.grad(lambda z: target.log_density(z, key)))

    @jax.jit
    def loop(zeta: Any, n: Any) -> Any:
        return jax.lax.fori_loop(0, n, lambda _, z: z + 1e-9 * grad(z), zeta)

    zeta = 0.1 * jax.random.normal(jax.random.PRNGKey(2), (M, target.dim))
    jax.block_until_ready(loop(zeta, 1))

    def timed(n: int) -> float:
        start = time.perf_counter()
        jax.block_until_ready(loop(zeta, n))
        return time.perf_counter() - start

    return timed


class AdviTimers:
    """ADVI iterations through the library's own compiled runner (``advi.fit._Runner`` and
    ``advi.fit._optimise``); if those private names change, through ``advi.fit`` itself
    (``result.wall_s``, compilation excluded; slower to run, since every call compiles)."""

    def __init__(self, model: Any, data: dict, M: int, minibatch_size: int | None = None
                 ) -> None:
        import advi

        self.model, self.data, self.M = model, data, M
        self.minibatch_size = minibatch_size
        start = time.perf_counter()
        try:
            self._init_runner(advi, M)
            self.mode = "advi.fit._Runner"
        except (AttributeError, TypeError) as err:
            self.mode = f"advi.fit (private runner unavailable: {err})"
        self.compile_s = time.perf_counter() - start if hasattr(self, "runner") else math.nan
        self.chunk(EVAL_ELBO)
        self.with_elbo(EVAL_ELBO)

    def _init_runner(self, advi: Any, M: int) -> None:
        import jax

        self.fit_mod = importlib.import_module("advi.fit")
        target = advi.from_numpyro(self.model, (), self.data,
                                   minibatch_size=self.minibatch_size)
        family, optimizer = advi.get_family("meanfield"), advi.get_optimizer("stan")
        keys, self.state0 = self.fit_mod._setup(
            jax.random.PRNGKey(0), family, optimizer, target.dim, "random"
        )
        _, self.run_key, self.elbo_key = keys
        self.runner = self.fit_mod._Runner(target, family, optimizer, M, 100)
        self.runner.compile(self.state0, self.run_key)

    def _fit(self, n: int, eval_elbo: int) -> Any:
        import jax

        import advi

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "max_iter reached"
            result = advi.fit(
                self.model,
                rng_key=jax.random.PRNGKey(0),
                grad_samples=self.M,
                eta=ETA,
                max_iter=n,
                eval_elbo=eval_elbo,
                tol_rel_obj=1e-12,
                khat_samples=0,
                minibatch_size=self.minibatch_size,
                **self.data,
            )
        if result.num_iterations != n:
            raise RuntimeError(f"ADVI stopped at iteration {result.num_iterations}")
        return result.wall_s

    def chunk(self, n: int) -> float:
        """n iterations in one call of the compiled chunk (pure iteration cost)."""
        if not hasattr(self, "runner"):
            return self._fit(n, eval_elbo=n)  # one ELBO evaluation, at the end
        start = time.perf_counter()
        state = self.runner.run(self.state0, ETA, self.run_key, 0, n)
        seconds = time.perf_counter() - start
        if bool(state.failed) or int(state.iteration) != n:
            raise RuntimeError(f"ADVI chunk stopped early at iteration {int(state.iteration)}")
        return seconds

    def with_elbo(self, n: int) -> float:
        """n iterations of the library's main loop (chunks of eval_elbo iterations, the
        100-draw ELBO and the convergence monitor after each); result.wall_s."""
        if not hasattr(self, "runner"):
            return self._fit(n, eval_elbo=EVAL_ELBO)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "max_iter reached"
            result = self.fit_mod._optimise(
                self.runner,
                self.state0,
                ETA,
                eta_adapted=False,
                run_key=self.run_key,
                elbo_key=self.elbo_key,
                compile_s=0.0,
                adapt_s=0.0,
                tol_rel_obj=1e-12,
                eval_elbo=EVAL_ELBO,
                max_iter=n,
                chunk_len=EVAL_ELBO,
                checkpoint_every=EVAL_ELBO,
                checkpoint=None,
                khat_samples=0,
            )
        if result.num_iterations != n:
            raise RuntimeError(f"ADVI loop stopped at iteration {result.num_iterations}")
        return result.wall_s


def make_svi_timer(model: Any, data: dict, M: int) -> tuple[Any, dict[str, float]]:
    """NumPyro SVI: n jitted ``svi.update`` steps inside one compiled ``lax.fori_loop``
    (data closed over, as in ADVI's log density). Returns ``(timed, seconds)`` with the
    seconds of ``svi.init``, of lowering + compiling the loop and of its first call."""
    import jax
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoDiagonalNormal
    from numpyro.optim import Adam

    seconds = {}
    start = time.perf_counter()
    svi = SVI(model, AutoDiagonalNormal(model), Adam(0.01), Trace_ELBO(num_particles=M))
    state0 = svi.init(jax.random.PRNGKey(0), **data)
    seconds["init_s"] = time.perf_counter() - start

    def loop(state: Any, n: Any) -> Any:
        return jax.lax.fori_loop(0, n, lambda _, s: svi.update(s, **data)[0], state)

    start = time.perf_counter()
    compiled = jax.jit(loop).lower(state0, 1).compile()
    seconds["compile_s"] = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(compiled(state0, 1))
    seconds["first_s"] = time.perf_counter() - start

    def timed(n: int) -> float:
        start = time.perf_counter()
        jax.block_until_ready(compiled(state0, n))
        return time.perf_counter() - start

    return timed, seconds


# ----------------------------------------------------------------------------------------
# Cold runs in fresh subprocesses (part c)
# ----------------------------------------------------------------------------------------


def child_advi(args: argparse.Namespace) -> dict:
    """Import, then advi.fit with defaults (eta search, tol_rel_obj=0.01) and 1,000 draws."""
    start = time.perf_counter()
    import jax

    import advi

    importlib.import_module("models.linreg_ard")
    import_s = time.perf_counter() - start

    start = time.perf_counter()
    model, data, _ = load_problem(args.seed, args.num_train, args.num_features)
    jax.block_until_ready(data)
    data_s = time.perf_counter() - start

    start = time.perf_counter()
    result = advi.fit(model, rng_key=jax.random.PRNGKey(args.seed), **data)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    draws = jax.block_until_ready(result.sample(jax.random.PRNGKey(1), 1000))
    sample_s = time.perf_counter() - start
    assert draws["w"].shape == (1000, args.num_features)
    return {
        "import_s": import_s,
        "data_s": data_s,
        "fit_s": fit_s,
        "sample_s": sample_s,
        "compile_s": result.compile_s,
        "adapt_s": result.adapt_s,
        "wall_s": result.wall_s,
        "num_iterations": result.num_iterations,
        "eta": result.eta,
        "converged": result.converged,
    }


def child_svi(args: argparse.Namespace) -> dict:
    """Import, then NumPyro SVI's init and the compile of its update loop (M = 1)."""
    start = time.perf_counter()
    import jax
    import numpyro  # noqa: F401

    importlib.import_module("models.linreg_ard")
    import_s = time.perf_counter() - start
    model, data, _ = load_problem(args.seed, args.num_train, args.num_features)
    jax.block_until_ready(data)
    _, seconds = make_svi_timer(model, data, 1)
    return {"import_s": import_s, **seconds}


def run_child(kind: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false")
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        "--seed",
        str(args.seed),
        "--num-train",
        str(args.num_train),
        "--num-features",
        str(args.num_features),
    ]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    process_s = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child {kind} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = process_s
    return out


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def passes(value: float, op: str, goal: float) -> bool:
    return value <= goal if op == "<=" else value < goal


def format_load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def print_header(provenance: str, args: argparse.Namespace) -> None:
    print("ADVI benchmark: linear regression with ARD")
    print(f"  data      N = {args.num_train}, D = {args.num_features}: {provenance}")
    print_environment()
    print(
        f"  settings  {args.iters} iterations per timing, {args.repeats} interleaved repeats,"
        f" eta = {ETA}, meanfield, Stan step-size sequence; SVI: Adam(0.01)"
    )
    print()


def print_environment() -> None:
    """Device, versions, XLA flags and the load average (other processes skew timings)."""
    import jax
    import jaxlib
    import numpy as np
    import numpyro
    import optax

    print(
        f"  device    {jax.devices()}  ({os.cpu_count()} CPU cores visible, "
        f"{platform.processor() or platform.machine()})"
    )
    print(
        f"  versions  python {platform.python_version()}, jax {jax.__version__}, "
        f"jaxlib {jaxlib.__version__}, numpyro {numpyro.__version__}, "
        f"optax {optax.__version__}, numpy {np.__version__}"
    )
    print(
        f"  XLA_FLAGS {os.environ.get('XLA_FLAGS', '(unset)')};  load average (1, 5, 15 min) "
        f"{format_load()}"
    )
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5 * (os.cpu_count() or 1):
        print("  WARNING   other processes are using the CPU; expect inflated, noisy timings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer iterations, repeats and cold runs (about 1 minute)",
    )
    parser.add_argument(
        "--iters",
        type=int,
        default=None,
        help=f"iterations per timing, a multiple of {EVAL_ELBO} (default 500)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (5)")
    parser.add_argument("--cold-runs", type=int, default=None, help="cold subprocess runs (2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-train", type=int, default=10_000)
    parser.add_argument("--num-features", type=int, default=250)
    parser.add_argument("--child", choices=("advi", "svi"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        fn = child_advi if args.child == "advi" else child_svi
        print(json.dumps(fn(args)))
        return

    args.iters = args.iters or (200 if args.quick else 500)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.cold_runs = args.cold_runs or (1 if args.quick else 2)
    if args.iters % EVAL_ELBO:
        parser.error(f"--iters must be a multiple of {EVAL_ELBO}")

    # (c) first, in fresh processes, while this one has not yet loaded anything heavy.
    cold = [run_child("advi", args) for _ in range(args.cold_runs)]
    svi_cold = run_child("svi", args)

    import advi

    model, data, provenance = load_problem(args.seed, args.num_train, args.num_features)
    print_header(provenance, args)
    target = advi.from_numpyro(model, (), data)
    Ms = (1, 10)

    timers: dict[tuple[str, int], Any] = {}
    compile_s: dict[tuple[str, int], float] = {}
    for M in Ms:
        timers["grad", M] = make_grad_timer(target, M)
        timers["grad loop", M] = make_grad_loop_timer(target, M)
        runner = AdviTimers(model, data, M)
        compile_s["advi", M] = runner.compile_s
        timers["advi chunk", M] = runner.chunk
        timers["advi +elbo", M] = runner.with_elbo
        timers["svi", M], svi_seconds = make_svi_timer(model, data, M)
        compile_s["svi", M] = svi_seconds["compile_s"]

    per_iter: dict[tuple[str, int], list[float]] = {key: [] for key in timers}
    for _ in range(args.repeats):
        for key, timed in timers.items():
            per_iter[key].append(timed(args.iters) / args.iters)
    med = {key: statistics.median(v) for key, v in per_iter.items()}

    print(
        f"(a), (b) steady state, after compilation: median ms per iteration "
        f"(min-max over {args.repeats} repeats)"
    )
    labels = {
        "grad": "gradient, jitted call (denominator of a)",
        "grad loop": "gradient inside a compiled loop",
        "advi chunk": "ADVI, compiled chunk only",
        "advi +elbo": f"ADVI main loop, 100-draw ELBO / {EVAL_ELBO} it",
        "svi": "NumPyro SVI, update in fori_loop",
    }
    print(f"  {'':46s}{'M = 1':>22s}{'M = 10':>22s}")
    for name, label in labels.items():
        cells = "".join(
            f"{1e3 * med[name, M]:9.3f} ({1e3 * min(per_iter[name, M]):.3f}-"
            f"{1e3 * max(per_iter[name, M]):.3f})".rjust(22)
            for M in Ms
        )
        print(f"  {label:46s}{cells}")
    print()
    print(f"  ADVI timed through {runner.mode}")
    print(
        f"  compile s: ADVI chunk+ELBO (M=1, M=10) {compile_s['advi', 1]:.2f}, "
        f"{compile_s['advi', 10]:.2f};  SVI loop {compile_s['svi', 1]:.2f}, "
        f"{compile_s['svi', 10]:.2f}"
    )
    print()

    low = {key: min(v) for key, v in per_iter.items()}
    # (label, M, numerator, denominator, target, comparison, gated by the target)
    specs = [
        ("(a) ADVI chunk / gradient call", "advi chunk", "grad", TARGET_GRAD_RATIO, "<=", True),
        ("(a) ADVI +ELBO / gradient call", "advi +elbo", "grad", TARGET_GRAD_RATIO, "<=", False),
        (
            "(a) ADVI chunk / gradient in loop",
            "advi chunk",
            "grad loop",
            TARGET_GRAD_RATIO,
            "<=",
            False,
        ),
        ("(b) ADVI chunk / NumPyro SVI", "advi chunk", "svi", TARGET_SVI_RATIO, "<", True),
        ("(b) ADVI +ELBO / NumPyro SVI", "advi +elbo", "svi", TARGET_SVI_RATIO, "<", False),
    ]
    rows = [
        (label, M, med[num, M] / med[den, M], low[num, M] / low[den, M], goal, op, gated)
        for label, num, den, goal, op, gated in specs
        for M in Ms
    ]

    cold_total = statistics.median(c["fit_s"] + c["sample_s"] for c in cold)
    print(
        f"(c) cold start in a fresh process ({args.cold_runs} run(s); JAX compilation cache "
        "off): advi.fit defaults + result.sample(key, 1000)"
    )
    print(
        f"  {'run':>4s} {'import':>7s} {'data':>6s} {'compile':>8s} {'adapt':>6s} "
        f"{'optim':>6s} {'other':>6s} {'sample':>7s} {'TOTAL':>7s} {'process':>8s}  "
        "iterations, eta, converged"
    )
    for i, c in enumerate(cold):
        other = c["fit_s"] - c["compile_s"] - c["wall_s"]
        print(
            f"  {i + 1:4d} {c['import_s']:7.2f} {c['data_s']:6.2f} {c['compile_s']:8.2f} "
            f"{c['adapt_s']:6.2f} {c['wall_s'] - c['adapt_s']:6.2f} {other:6.2f} "
            f"{c['sample_s']:7.2f} {c['fit_s'] + c['sample_s']:7.2f} {c['process_s']:8.2f}  "
            f"{c['num_iterations']}, {c['eta']:g}, {c['converged']}"
        )
    print(
        "  TOTAL = fit + sample = compile (setup, chunk and ELBO functions) + adapt (eta search)"
        "\n  + optim (main loop) + other (model probe, 1,000-draw k-hat) + sample; import, data"
        "\n  and process (interpreter start to exit, as seen by the parent) are not in TOTAL"
    )
    svi_total = svi_cold["init_s"] + svi_cold["compile_s"] + svi_cold["first_s"]
    print(
        f"  NumPyro SVI cold (M = 1): import {svi_cold['import_s']:.2f} s; svi.init "
        f"{svi_cold['init_s']:.2f} s + lower/compile of the update loop "
        f"{svi_cold['compile_s']:.2f} s + first call {svi_cold['first_s']:.2f} s "
        f"= {svi_total:.2f} s before its first iteration"
    )
    print()

    print(
        "Summary (ratios of medians; 'of mins' = ratio of the fastest repeats, less "
        "sensitive to other load)"
    )
    print(f"  {'quantity':36s}{'M':>4s}{'ratio':>9s}{'of mins':>9s}{'target':>12s}   verdict")
    for label, M, value, value_min, goal, op, gated in rows:
        tag = verdict(passes(value, op, goal))
        tag = tag if gated else f"({tag.lower()}, info)"
        print(f"  {label:36s}{M:4d}{value:9.3f}{value_min:9.3f}{op:>6s} {goal:5.2f}   {tag}")
    print(
        f"  {'(c) cold time to result, s':36s}{'':4s}{cold_total:9.2f}{'':9s}{'<':>6s} "
        f"{TARGET_COLD_S:5.2f}   {verdict(cold_total < TARGET_COLD_S)}   "
        f"(Stan ADVI: {STAN_COLD_S} s)"
    )
    print(f"  load average (1, 5, 15 min) at the end: {format_load()}")
    print()
    for label, M, value, _, goal, op, gated in rows:
        if gated:
            print(f"{verdict(passes(value, op, goal))}  {label} (M = {M}): {value:.3f} {op} {goal}")
    print(
        f"{verdict(cold_total < TARGET_COLD_S)}  (c) cold advi.fit + 1,000 draws: "
        f"{cold_total:.2f} s < {TARGET_COLD_S} s"
    )


if __name__ == "__main__":
    main()
