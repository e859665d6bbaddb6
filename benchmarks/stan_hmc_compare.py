"""CmdStan's static HMC on an experiment's data, transition by transition (docs/hmc.md).

Exports an experiment's training data (the project's own loading, ``advi_repro.planning.data``) as
CmdStan JSON for the Stan programs in ``benchmarks/stan/``, checks a compiled program
against the NumPyro model (``check``: log density up to a constant and its gradient at
random unconstrained points, by CmdStan's ``method=log_prob``), runs the program's static
HMC as the paper's HMC (``engine=static int_time=2 pi metric=diag_e``, Stan's own U(-2, 2)
start, ``save_warmup=1 refresh=1``) under a CPU-time cap, and prints per iteration the step
size, the leapfrog steps L = int(2 pi / step size) (the first transition's L is
int(2 pi / 1) = 6), the acceptance statistic, lp__ and the CPU seconds, with the held-out
log predictive density (nats per held-out observation, the models' own
``log_likelihood``) of the draws scored as our trace scores them: each warmup chunk of
``--chunk`` draws alone, all post-warmup draws so far in sampling.

    # build a program once (CmdStan 2.35): $CMDSTAN/bin/build_model benchmarks/stan/gmm.stan
    python benchmarks/stan_hmc_compare.py export gmm --out gmm.json
    python benchmarks/stan_hmc_compare.py check gmm --binary benchmarks/stan/gmm
    python benchmarks/stan_hmc_compare.py run gmm --binary benchmarks/stan/gmm \\
        --workdir stan_gmm --stan-seed 1 --cpu-s 1200
    python benchmarks/stan_hmc_compare.py table gmm --csv stan_gmm/output.csv

``run`` writes ``<workdir>/data.json``, ``output.csv`` (CmdStan's, one line per iteration,
kept when the cap stops the run), ``stdout.log`` and ``times.csv`` (CPU and wall seconds
at each iteration's progress line), then prints the table; ``table`` prints it again from
the files. The data are those of ``scripts/fit.py experiment=<name> scale=<scale>`` with
the given ``--results-dir`` (made there if missing, as ``fit.py`` makes them).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import math
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_common  # noqa: F401  (this checkout on sys.path, unless advi_repro is installed)
import numpy as np

INT_TIME = 2.0 * math.pi
"""Stan's default ``int_time`` for static HMC (the paper's HMC)."""

STAN_LAYOUT: dict[str, tuple[tuple[str, str], ...]] = {
    "linreg_ard": (("w", "vector"), ("tau", "vector"), ("alpha", "vector")),
    "gamma_poisson_nmf": (("theta", "array"), ("beta", "matrix")),
    "dirichlet_exponential_nmf": (("theta", "array"), ("beta", "matrix")),
    "gmm": (("theta", "vector"), ("mu", "matrix"), ("sigma", "matrix")),
}
"""Per model, its Stan program's parameters in declaration order (the order of Stan's
unconstrained vector) and how each is laid out there: ``array`` (an array of vectors, each
vector's unconstrained entries in turn: row-major over our (rows, entries) array),
``matrix`` (column-major) or ``vector``."""


@dataclass
class Experiment:
    """An experiment's model module, its keyword arguments and its data split."""

    name: str
    model_name: str
    module: Any
    model_args: dict[str, Any]
    train: dict[str, Any]
    heldout: dict[str, Any]
    num_heldout: int


def load_experiment(name: str, *, scale: str = "paper", results_dir: str = "results",
                    seed: int = 0) -> Experiment:
    """The data of ``scripts/fit.py experiment=<name> scale=<scale> seed=<seed>``, made
    under ``results_dir`` if missing (``advi_repro.planning.data.prepare_data``)."""
    from hydra import compose, initialize_config_dir

    from advi_repro import models
    from advi_repro.planning.config import register, to_run
    from advi_repro.planning.data import load_problem, prepare_data
    from advi_repro.planning.paths import checkout_conf

    conf = checkout_conf(__file__)  # this checkout's conf/
    register(conf)
    overrides = [f"experiment={name}", f"scale={scale}", f"seed={seed}",
                 f"results_dir={results_dir}", "method=hmc"]
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        run = to_run(compose("config", overrides))
    problem = load_problem(run, prepare_data(run))
    module = models.get(run.experiment.model)
    defaults = {key: param.default for key, param
                in inspect.signature(module.model).parameters.items()
                if param.kind is param.KEYWORD_ONLY}
    return Experiment(name=name, model_name=run.experiment.model, module=module,
                      model_args={**defaults, **dict(run.experiment.model_args)},
                      train=dict(problem.train), heldout=dict(problem.heldout),
                      num_heldout=problem.num_heldout)


def stan_data(experiment: Experiment) -> dict[str, Any]:
    """CmdStan's data for the experiment's program in ``benchmarks/stan/`` (plain lists)."""
    args, train = experiment.model_args, experiment.train
    if experiment.model_name in ("gamma_poisson_nmf", "dirichlet_exponential_nmf"):
        y = np.asarray(train["y"])
        frame, pixel = np.nonzero(np.asarray(train["mask"]))  # row-major: frame by frame
        counts = y[frame, pixel]
        if not np.array_equal(counts, np.round(counts)):
            raise ValueError("the counts y are not integers")
        data: dict[str, Any] = {
            "U": int(y.shape[0]), "I": int(y.shape[1]), "K": int(args["K"]),
            "N": int(frame.size), "frame": (frame + 1).tolist(), "pixel": (pixel + 1).tolist(),
            "y": counts.astype(np.int64).tolist()}
        keys = (("a0", "b0", "c0", "d0") if experiment.model_name == "gamma_poisson_nmf"
                else ("alpha0", "lambda0"))
        return {**data, **{key: float(args[key]) for key in keys}}
    if experiment.model_name == "gmm":
        x = np.asarray(train["x"], dtype=np.float64)
        return {"N": int(x.shape[0]), "D": int(x.shape[1]), "K": int(args["K"]),
                "x": x.tolist(), "alpha0": float(args["alpha0"]),
                "sigma_mu": float(args["sigma_mu"]), "sigma_sigma": float(args["sigma_sigma"])}
    if experiment.model_name == "linreg_ard":
        x = np.asarray(train["X"], dtype=np.float64)
        return {"N": int(x.shape[0]), "D": int(x.shape[1]), "x": x.tolist(),
                "y": np.asarray(train["y"], dtype=np.float64).tolist()}
    raise ValueError(f"no Stan program for model {experiment.model_name!r}")


def write_json(path: Path, value: Any) -> Path:
    """Writes ``value`` as JSON to ``path`` (parents made) and returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def to_stan_order(model_name: str, values: dict[str, Any]) -> np.ndarray:
    """Our unconstrained values (or gradients), dict site -> array, as Stan's unconstrained
    vector (:data:`STAN_LAYOUT`)."""
    parts = []
    for site, layout in STAN_LAYOUT[model_name]:
        value = np.asarray(values[site], dtype=np.float64)
        parts.append(value.T.ravel() if layout == "matrix" else value.ravel())
    return np.concatenate(parts)


def check_log_prob(experiment: Experiment, binary: Path, workdir: Path, *, points: int,
                   seed: int) -> tuple[float, float]:
    """Our potential and CmdStan's ``method=log_prob jacobian=1`` at ``points`` random
    unconstrained points (U(-2, 2), Stan's init range). Prints both and returns (the
    spread of lp_stan + potential across points, the largest relative gradient error
    max|g_stan - g_ours| / max|g_ours|)."""
    import jax
    from numpyro.infer.util import initialize_model

    jax.config.update("jax_enable_x64", True)
    model = functools.partial(experiment.module.model, **experiment.model_args)
    info = initialize_model(jax.random.PRNGKey(seed), model, model_kwargs=experiment.train,
                            dynamic_args=False)
    value_and_grad = jax.jit(jax.value_and_grad(info.potential_fn))
    rng = np.random.default_rng(seed)
    ours, stan_points = [], []
    for _ in range(points):
        z = {site: rng.uniform(-2.0, 2.0, size=np.shape(value))
             for site, value in info.param_info.z.items()}
        potential, grad = value_and_grad(z)
        ours.append((float(potential), to_stan_order(experiment.model_name, grad)))
        stan_points.append(to_stan_order(experiment.model_name, z).tolist())
    data = write_json(workdir / "data.json", stan_data(experiment))
    rows = []
    for n, point in enumerate(stan_points):  # one point per call: CmdStan 2.35 reads a
        # list of points in params_r in another order than one point
        params = write_json(workdir / f"log_prob_point{n}.json", {"params_r": point})
        out = workdir / f"log_prob{n}.csv"
        subprocess.run([str(binary), "method=log_prob", f"unconstrained_params={params}",
                        "jacobian=1", "data", f"file={data}", "output", f"file={out}",
                        "sig_figs=18"], check=True, stdout=subprocess.DEVNULL)
        rows += [line for line in out.read_text().splitlines()
                 if line and not line.startswith("#")][1:]
    offsets, errors = [], []
    for n, (row, (potential, grad)) in enumerate(zip(rows, ours, strict=True)):
        numbers = np.array(row.split(","), dtype=np.float64)
        lp, stan_grad = numbers[0], numbers[1:]
        error = float(np.max(np.abs(stan_grad + grad)) / np.max(np.abs(grad)))
        offsets.append(lp + potential)
        errors.append(error)
        print(f"point {n}: Stan lp {lp:.10g}, ours -potential {-potential:.10g}, "
              f"difference {lp + potential:.10g}; gradient: {stan_grad.size} entries, "
              f"max |Stan - ours| / max |ours| = {error:.3g}")
    spread = float(np.ptp(offsets))
    print(f"difference spread across points: {spread:.3g} nats; largest relative gradient "
          f"error {max(errors):.3g}")
    return spread, max(errors)


def run_stan(binary: Path, data: Path, workdir: Path, *, stan_seed: int, cpu_s: float,
             num_warmup: int = 1000, num_samples: int = 1000, init: Path | None = None,
             nice: int = 19) -> int:
    """CmdStan's static HMC (the paper's: int_time 2 pi, diag_e, Stan's U(-2, 2) start
    unless ``init`` names a JSON of constrained values), ``save_warmup=1 refresh=1``,
    under a CPU-time cap of ``cpu_s`` seconds (``ulimit -t``) at niceness ``nice``.
    Writes ``output.csv``, ``stdout.log`` and ``times.csv`` (iteration, CPU seconds, wall
    seconds at each progress line) in ``workdir``; returns CmdStan's exit status (a
    negative signal number when the cap stopped it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    # nice, then a shell that sets the cap and execs CmdStan: one process id throughout
    command = ["nice", "-n", str(nice), "sh", "-c", f"ulimit -t {int(cpu_s)} && exec \"$0\" \"$@\"",
               str(binary), "method=sample", f"num_warmup={num_warmup}",
               f"num_samples={num_samples}", "save_warmup=1", "algorithm=hmc",
               "engine=static", f"int_time={INT_TIME!r}", "metric=diag_e", "data",
               f"file={data}", *([f"init={init}"] if init is not None else []), "random",
               f"seed={stan_seed}", "output", f"file={workdir / 'output.csv'}", "refresh=1"]

    start = time.perf_counter()
    progress = re.compile(r"Iteration:\s+(\d+)\s*/")
    with open(workdir / "stdout.log", "w") as log, open(workdir / "times.csv", "w") as times:
        times.write("iteration,cpu_s,wall_s\n")
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
        assert child.stdout is not None
        for line in child.stdout:
            log.write(line)
            match = progress.search(line)
            if match:
                times.write(f"{match.group(1)},{_cpu_seconds(child.pid):.2f},"
                            f"{time.perf_counter() - start:.2f}\n")
                times.flush()
        return child.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc/<pid>/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_stan_csv(path: Path) -> Iterator[tuple[dict[str, float], dict[str, np.ndarray]]]:
    """Each complete iteration of a CmdStan CSV: (sampler columns ending in ``__``, dict
    parameter -> constrained array, shaped by the column names' indices)."""
    header: list[str] | None = None
    sites: dict[str, tuple[tuple[int, ...], np.ndarray, np.ndarray]] = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            if header is None:
                header = line.strip().split(",")
                sites = _site_columns(header)
                continue
            if not line.endswith("\n"):
                return  # the line being written when the run was stopped
            numbers = np.array(line.split(","), dtype=np.float64)
            if numbers.size != len(header):
                return
            stats = {name: float(numbers[i]) for i, name in enumerate(header)
                     if name.endswith("__")}
            draws = {}
            for site, (shape, columns, flat) in sites.items():
                value = np.empty(int(np.prod(shape)))
                value[flat] = numbers[columns]
                draws[site] = value.reshape(shape)
            yield stats, draws


def _site_columns(header: list[str]) -> dict[str, tuple[tuple[int, ...], np.ndarray,
                                                        np.ndarray]]:
    """Per parameter: its shape, its columns and their row-major positions in it."""
    found: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
    for column, name in enumerate(header):
        if name.endswith("__"):
            continue
        site, *index = name.split(".")
        found.setdefault(site, []).append((column, tuple(int(i) - 1 for i in index)))
    sites = {}
    for site, entries in found.items():
        shape = tuple(max(index[d] for _, index in entries) + 1
                      for d in range(len(entries[0][1])))
        columns = np.array([column for column, _ in entries])
        flat = np.array([np.ravel_multi_index(index, shape) if shape else 0
                         for _, index in entries])
        sites[site] = (shape, columns, flat)
    return sites


def table(experiment: Experiment, csv: Path, *, num_warmup: int, chunk: int,
          times: Path | None = None) -> list[dict[str, Any]]:
    """Prints the per-iteration table of a CmdStan CSV (see the module's docstring) and
    returns its rows; ``heldout_lpd`` is filled at the end of each chunk (warmup: the
    chunk's draws alone; sampling: all post-warmup draws so far) and at the last iteration."""
    import jax

    from advi_repro.runners.scoring import RunningLogMeanExp

    jax.config.update("jax_enable_x64", True)
    log_likelihood = jax.jit(experiment.module.log_likelihood)
    seconds: dict[int, tuple[float, float]] = {}
    if times is not None and times.exists():
        for line in times.read_text().splitlines()[1:]:
            iteration, cpu, wall = line.split(",")
            seconds[int(iteration)] = (float(cpu), float(wall))
    rows: list[dict[str, Any]] = []
    sampling_scores = RunningLogMeanExp()
    pending: list[dict[str, np.ndarray]] = []

    def score(draws: list[dict[str, np.ndarray]], scores: RunningLogMeanExp) -> float:
        batch = {site: np.stack([d[site] for d in draws]) for site in draws[0]}
        scores.update(np.asarray(log_likelihood(batch, **experiment.heldout)))
        return scores.lpd()

    print(f"{'iter':>5} {'stepsize':>11} {'L':>9} {'accept':>8} {'lp__':>14} "
          f"{'cpu_s':>8} {'heldout_lpd':>12}")
    iterations = list(read_stan_csv(csv))
    for n, (stats, draws) in enumerate(iterations, start=1):
        step = stats["stepsize__"]
        steps = int(INT_TIME / 1.0) if n == 1 else max(1, int(INT_TIME / step))
        row = {"iteration": n, "stepsize": step, "L": steps,
               "accept_stat": stats["accept_stat__"], "lp": stats["lp__"],
               # CmdStan prints "Iteration: n" before making transition n
               "cpu_s": seconds.get(n + 1, (float("nan"),))[0], "heldout_lpd": None}
        sampling = n > num_warmup
        pending.append(draws)
        end_of_chunk = (n % chunk == 0) or n == num_warmup or n == len(iterations)
        if end_of_chunk:
            row["heldout_lpd"] = score(pending, sampling_scores if sampling
                                       else RunningLogMeanExp())
            pending = []
        rows.append(row)
        lpd = "" if row["heldout_lpd"] is None else f"{row['heldout_lpd']:.4f}"
        print(f"{n:>5} {step:>11.4g} {steps:>9} {row['accept_stat']:>8.3f} "
              f"{row['lp']:>14.6g} {row['cpu_s']:>8.1f} {lpd:>12}")
    return rows


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, about in (("export", "write the training data as CmdStan JSON"),
                        ("check", "compare CmdStan's log_prob with our potential"),
                        ("run", "run CmdStan's static HMC and print the table"),
                        ("table", "print the table of an existing run")):
        command = commands.add_parser(name, help=about)
        command.add_argument("experiment", help="experiment name (conf/experiment/*.yaml)")
        command.add_argument("--scale", default="paper", help="scale (default paper)")
        command.add_argument("--data-seed", type=int, default=0,
                             help="fit.py's seed for the data split (default 0)")
        command.add_argument("--results-dir", default="results",
                             help="where the data are made or found (default results)")
        if name == "export":
            command.add_argument("--out", type=Path, required=True, help="JSON file")
        if name in ("check", "run"):
            command.add_argument("--binary", type=Path, required=True,
                                 help="the compiled Stan program (benchmarks/stan/*.stan)")
        if name == "check":
            command.add_argument("--points", type=int, default=3)
            command.add_argument("--seed", type=int, default=0, help="seed of the points")
            command.add_argument("--workdir", type=Path, default=Path("stan_check"))
        if name in ("run", "table"):
            command.add_argument("--num-warmup", type=int, default=1000)
            command.add_argument("--chunk", type=int, default=10,
                                 help="warmup draws scored together (our checkpoint_every)")
        if name == "run":
            command.add_argument("--workdir", type=Path, required=True)
            command.add_argument("--stan-seed", type=int, default=1)
            command.add_argument("--cpu-s", type=float, default=1200.0,
                                 help="CPU-time cap of the CmdStan run (seconds)")
            command.add_argument("--num-samples", type=int, default=1000)
            command.add_argument("--init", type=Path, default=None,
                                 help="JSON of constrained initial values (default: Stan's "
                                      "U(-2, 2) start)")
            command.add_argument("--nice", type=int, default=19)
        if name == "table":
            command.add_argument("--csv", type=Path, required=True)
            command.add_argument("--times", type=Path, default=None,
                                 help="times.csv of the run (default: beside --csv)")
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    experiment = load_experiment(args.experiment, scale=args.scale,
                                 results_dir=args.results_dir, seed=args.data_seed)
    if args.command == "export":
        write_json(args.out, stan_data(experiment))
    elif args.command == "check":
        check_log_prob(experiment, args.binary, args.workdir, points=args.points,
                       seed=args.seed)
    elif args.command == "run":
        data = write_json(args.workdir / "data.json", stan_data(experiment))
        status = run_stan(args.binary, data, args.workdir, stan_seed=args.stan_seed,
                          cpu_s=args.cpu_s, num_warmup=args.num_warmup,
                          num_samples=args.num_samples, init=args.init, nice=args.nice)
        print(f"CmdStan exit status {status}")
        table(experiment, args.workdir / "output.csv", num_warmup=args.num_warmup,
              chunk=args.chunk, times=args.workdir / "times.csv")
    else:
        table(experiment, args.csv, num_warmup=args.num_warmup, chunk=args.chunk,
              times=args.times or args.csv.parent / "times.csv")


if __name__ == "__main__":
    main()
