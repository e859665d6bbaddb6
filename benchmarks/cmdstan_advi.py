"""Stan's own ADVI on E1, timed on this machine the way ``bench_advi.py`` (b) times ours.

CmdStan's ``variational`` method (Stan's defaults: mean-field, eta adapted over 100, 10, 1,
0.1, 0.01, tol_rel_obj 0.01, one gradient draw, 100 ELBO draws every 100 iterations) on the
program ``benchmarks/stan/linreg_ard.stan``, which matches ``advi_repro.models.linreg_ard`` term for
term, with ``output_samples=1000``: Stan's fit plus 1,000 draws, the analogue of our
``advi.fit`` + ``result.sample(key, 1000)``. The program is compiled beforehand (CmdStan
2.35: ``$CMDSTAN/bin/build_model benchmarks/stan/linreg_ard.stan``), as a persistent
compilation cache serves our warm fresh process.

The seconds counted start when CmdStan prints its first gradient timing, that is after it
has read the data (a 10,000 x 250 JSON array takes it about a second), and end when the
process exits, after writing the draws; our TOTAL likewise leaves out the import and the
data. Stan's held-out log predictive density is scored from its 1,000 draws with
``advi_repro.models.linreg_ard.log_likelihood``, as ours.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FIRST_LINE = "Gradient evaluation took"
"""CmdStan's first line after the data are read (its timing of one gradient)."""

ITERATION = re.compile(r"^\s*(\d+)\s+-?[\d.e+-]+\s+[\d.e+-]+\s+[\d.e+-]+")
"""A line of Stan's ADVI table: iteration, ELBO, relative ELBO changes (mean, median)."""


def write_data(X: Any, y: Any, path: Path) -> Path:
    """E1's training data as CmdStan JSON (``N``, ``D``, ``x``, ``y``) at ``path``."""
    x = np.asarray(X, dtype=np.float64)
    data = {"N": int(x.shape[0]), "D": int(x.shape[1]), "x": x.tolist(),
            "y": np.asarray(y, dtype=np.float64).tolist()}
    path.write_text(json.dumps(data))
    return path


def run_variational(binary: Path, data: Path, workdir: Path, seed: int,
                    clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """Run Stan's ADVI with its defaults and 1,000 draws, and time it.

    Args:
        binary: the compiled CmdStan program of ``linreg_ard.stan``.
        data: its JSON data (:func:`write_data`).
        workdir: where CmdStan writes ``output-<seed>.csv``.
        seed: CmdStan's ``random seed``.
        clock: ``() -> seconds`` (a fake one in tests).

    Returns:
        ``{"fit_s": seconds from CmdStan's first gradient timing to its exit, "process_s":
        the whole process, "iterations": the last iteration of Stan's ADVI table (0 if
        none), "converged": whether Stan printed "COMPLETED", "csv": the output path}``.

    Raises:
        RuntimeError: CmdStan exited with an error (its last output lines included).
    """
    csv = workdir / f"output-{seed}.csv"
    command = [str(binary), "variational", "output_samples=1000", "data", f"file={data}",
               "output", f"file={csv}", "random", f"seed={seed}"]
    start = clock()
    first, lines = None, []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        for line in proc.stdout:
            if first is None and FIRST_LINE in line:
                first = clock()
            lines.append(line.rstrip())
    end = clock()
    if proc.returncode != 0 or first is None:
        raise RuntimeError(f"CmdStan exited with {proc.returncode}:\n" + "\n".join(lines[-20:]))
    iterations = [int(m.group(1)) for m in map(ITERATION.match, lines) if m]
    return {"fit_s": end - first, "process_s": end - start,
            "iterations": iterations[-1] if iterations else 0,
            "converged": any("COMPLETED" in line for line in lines), "csv": csv}


def read_draws(csv: Path) -> dict[str, np.ndarray]:
    """Stan's draws from its output CSV (the first row, the approximation's mean, dropped):
    ``{"w": (S, D), "tau": (S,), "alpha": (S, D)}`` float32."""
    import pandas as pd

    table = pd.read_csv(csv, comment="#").iloc[1:]

    def block(name: str) -> np.ndarray:
        columns = [c for c in table.columns if c.startswith(f"{name}.")]
        return table[columns].to_numpy(np.float32)

    return {"w": block("w"), "tau": table["tau"].to_numpy(np.float32), "alpha": block("alpha")}
