"""Figure 3 (E0): the transformation at the heart of ADVI, on the Poisson model with an
exponential prior, whose posterior is Gamma (conjugate), so every panel is exact.

(a) lambda-space: the exact Gamma posterior against the non-Gaussian density ADVI implies
    there (a log-normal); (b) zeta = log lambda: the posterior with its Jacobian against the
    Gaussian q; (c) the standardised space eta = (zeta - mu) / sigma against N(0, 1).
Colours as the paper: posterior purple, approximation green.

Run by Snakemake (writes ``snakemake.output.png``, its ``.pdf`` and the fit table
``snakemake.output.fit``, see ``advi_repro.analysis.transformation.transformation_table``) or from
the shell:
``python scripts/plot_transformations.py results/figures/fig3_transformations.png``.
"""

import argparse
import logging
from pathlib import Path

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import special, stats  # noqa: E402

import advi  # noqa: E402
from advi_repro.analysis.transformation import transformation_table  # noqa: E402
from advi_repro.models import poisson_exponential  # noqa: E402
from advi_repro.planning.files import atomic_open  # noqa: E402
from advi_repro.planning.scriptlog import log_to  # noqa: E402

PURPLE, GREEN = "#7b3294", "#1b9e77"


def posterior_zeta_logpdf(zeta: np.ndarray, a: float, b: float) -> np.ndarray:
    """log p(zeta | x) for zeta = log lambda, lambda ~ Gamma(a, b): includes the Jacobian."""
    return a * np.log(b) - special.gammaln(a) + a * zeta - b * np.exp(zeta)


def render(out_png: Path, *, seed: int = 0, num_counts: int = 3) -> dict[str, float]:
    """Fit ADVI to ``num_counts`` Poisson counts (few, so the posterior is visibly skewed, as
    in the paper's figure) and draw the three panels to ``out_png`` and its ``.pdf``.

    Returns:
        the fitted mu and sigma and the exact posterior's shape a and rate b.
    """
    problem = poisson_exponential.load(None, seed=seed, n_train=num_counts)
    x = problem.train["x"]
    a, b = poisson_exponential.exact_posterior(x)
    result = advi.fit(
        poisson_exponential.model, rng_key=jax.random.PRNGKey(seed), grad_samples=10,
        tol_rel_obj=1e-3, model_kwargs=problem.train,
    )
    mu = float(result.params.mu[0])
    sigma = float(np.exp(result.params.omega[0]))

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    lam = np.linspace(1e-3, 3 * a / b, 400)
    axes[0].plot(lam, stats.gamma(a, scale=1 / b).pdf(lam), color=PURPLE, label="posterior")
    axes[0].plot(lam, stats.lognorm(sigma, scale=np.exp(mu)).pdf(lam), color=GREEN,
                 label="ADVI approximation")
    axes[0].set(xlabel=r"$\lambda$", title=r"(a) latent variable space $\lambda > 0$")
    zeta = np.linspace(mu - 5 * sigma, mu + 5 * sigma, 400)
    axes[1].plot(zeta, np.exp(posterior_zeta_logpdf(zeta, a, b)), color=PURPLE)
    axes[1].plot(zeta, stats.norm(mu, sigma).pdf(zeta), color=GREEN)
    axes[1].set(xlabel=r"$\zeta = \log\lambda$", title=r"(b) real coordinate space $\zeta$")
    eta = np.linspace(-4, 4, 400)
    axes[2].plot(eta, sigma * np.exp(posterior_zeta_logpdf(mu + sigma * eta, a, b)),
                 color=PURPLE)
    axes[2].plot(eta, stats.norm.pdf(eta), color=GREEN)
    axes[2].set(xlabel=r"$\eta = (\zeta - \mu) / \sigma$", title=r"(c) standardised space $\eta$")
    for ax in axes:
        ax.set_yticks([])
    axes[0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    out_png.parent.mkdir(parents=True, exist_ok=True)
    for path in (out_png, out_png.with_suffix(".pdf")):
        with atomic_open(path, "wb") as f:
            fig.savefig(f, format=path.suffix[1:])
    plt.close(fig)
    return {"mu": mu, "sigma": sigma, "a": a, "b": b}


def main() -> None:
    """Draws Figure 3 for Snakemake (its log records the fit, or the error), or from the
    command line."""
    if "snakemake" in globals():
        log_to(snakemake.log[0])  # noqa: F821
        fit = render(Path(snakemake.output.png), seed=int(snakemake.params.seed))  # noqa: F821
        with atomic_open(snakemake.output.fit) as f:  # noqa: F821
            transformation_table(fit).to_csv(f, index=False, float_format="%.6g")
        logging.info("Figure 3: %s", fit)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_png", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(render(args.out_png, seed=args.seed))


if __name__ == "__main__":
    main()
