"""Mean-field's sds on the validation suite: how far too small, and what predicts it.

For each target of ``suite_targets.py`` (``--targets``), one robust mean-field fit
(``--seed``) and, per compared quantity, the truth's sd over the fit's (4,000 draws). Against
it, the prediction of ``advi.spread``: the sd of the quantity under N(c, (-H)^-1) over its sd
under N(c, diag(1 / (-H)_kk)), 4,000 draws pushed through the target's constraining map,
with -H the exact Hessian (float64, ``jax.hessian``) at two places c:

- the mode of log p, found here by SciPy's L-BFGS-B from q's mean (not by ``advi``);
- q's mean.

Per place: the largest sqrt(VIF_k) over zeta's coordinates, the largest predicted factor
over the quantities and the truth's factor on that quantity, the quantities both call
more than 2x, and the correlation of the logs of predicted and true factors. "not PD": -H
there is not positive definite (no prediction; ``advi.spread`` says nothing).

    python benchmarks/bench_spread.py --targets "posteriordb diamonds" EightSchools
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np
import suite_targets

from advi.spread import SD_INFLATION_MAX as FAR

NUM_DRAWS = 4000


def _fit(problem: suite_targets.Problem, seed: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """(the fitted target, q's mean (K,) float64, truth's sd over q's per quantity (D,))."""
    import jax

    import advi

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = advi.fit(problem.model, *problem.args, rng_key=jax.random.PRNGKey(seed),
                          preset="robust", progress_bar=False)
    draws = jax.device_get(result.sample(jax.random.PRNGKey(seed + 10_000), NUM_DRAWS))
    factor = problem.sd / problem.quantities(draws).std(0)
    return (result.approximation.target,
            np.asarray(result.approximation.params.mu, np.float64), factor)


def predicted(problem: suite_targets.Problem, target: Any, center: np.ndarray,
              precision: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(per quantity (D,): marginal over conditional sd under the Gaussians of the module
    docstring, per zeta coordinate (K,): sqrt(VIF)), or None where ``precision`` (-H at
    ``center``) is not positive definite."""
    import jax

    from advi.curvature import whitening
    from advi.spread import sd_inflation

    vif = sd_inflation(precision)
    if vif is None:
        return None
    eps = np.random.default_rng(0).standard_normal((NUM_DRAWS, center.size))
    chol = whitening(0.5 * (precision + precision.T), center.size)[0]  # C C^T = (-H)^-1

    def sd(zeta: np.ndarray) -> np.ndarray:
        return problem.quantities(jax.device_get(jax.vmap(target.constrain)(zeta))).std(0)

    return sd(center + eps @ chol.T) / sd(center + eps / np.sqrt(np.diag(precision))), vif


def row(name: str, seed: int) -> str:
    """The table's line for target ``name``."""
    import jax
    from scipy.optimize import minimize

    problem = suite_targets.TARGETS[name].make()
    target, mean, truth = _fit(problem, seed)
    cells = [name, str(mean.size), f"{truth.max():.3g} ({int(np.sum(truth > FAR))})"]
    energy = jax.jit(lambda z: -target.full_log_density(z))
    hessian = jax.jit(jax.hessian(lambda z: -target.full_log_density(z)))
    mode = minimize(lambda z: float(energy(z)), mean, method="L-BFGS-B",
                    jac=lambda z: np.asarray(jax.grad(energy)(z), np.float64),
                    options={"maxiter": 5000, "gtol": 1e-9}).x
    for center in (mode, mean):
        found = predicted(problem, target, center, np.asarray(hessian(center), np.float64))
        if found is None:
            cells += ["not PD"]
            continue
        ratio, vif = found
        k = int(np.nanargmax(ratio))
        both = int(np.sum((ratio > FAR) & (truth > FAR)))
        corr = np.corrcoef(np.log(ratio), np.log(truth))[0, 1]
        cells += [f"{vif.max():.3g}; {ratio[k]:.3g} (truth {truth[k]:.3g}); "
                  f"{int(np.sum(ratio > FAR))} / {both}; {corr:.2f}"]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    import jax

    args = _parser().parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # the Hessians; the fits keep float32
    print("| target | K | truth's sd / q's: largest (quantities > 2x) "
          "| at the mode: largest sqrt(VIF); largest predicted (truth there); > 2x "
          "predicted / both; log corr | at q's mean: the same |")
    print("| --- | ---: | --- | --- | --- |")
    for name in args.targets:
        print(row(name, args.seed), flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", required=True,
                        choices=sorted(suite_targets.TARGETS), metavar="TARGET")
    parser.add_argument("--seed", type=int, default=0)
    return parser


if __name__ == "__main__":
    main()
