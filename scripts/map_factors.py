"""The posterior mode (MAP) of a Frey-face factorisation, for comparison with Figure 5d.

Maximises the model's own log joint density (``numpyro.infer.util.log_density`` of
``models.<model>.model`` on the training entries) over theta and beta in the constrained
space, with theta = softmax(a) per frame and beta = exp(b), by Adam. This is what the
factors look like at the mode of the posterior under given hyperparameters, free of any
question of ADVI's convergence. Writes ``<out_dir>/map_<model>_alpha0<a>.npz`` with
``beta`` (I, K) and ``theta`` (U, K), which ``scripts/plot_factors.py`` draws.

    python scripts/map_factors.py --frames frey_rawface.npy --alpha0 1000 1 --out-dir out/
"""

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from numpyro.infer.util import log_density

from advi_repro import models


def fit_map(problem: models.Problem, model_name: str, model_args: dict, *, steps: int,
            learning_rate: float, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(theta (U, K), beta (I, K), log joint per training entry) at the end of Adam."""
    module = models.get(model_name)
    y = problem.train["y"]
    num_frames, num_pixels = y.shape
    K = int(model_args["K"])
    key_a, key_b = jax.random.split(jax.random.PRNGKey(seed))
    scale = jnp.log(jnp.mean(y))  # each of K factors near the mean count times K / K
    params = {"a": 0.01 * jax.random.normal(key_a, (num_frames, K)),
              "b": scale + 0.5 * jax.random.normal(key_b, (num_pixels, K))}
    num_train = float(problem.train["mask"].sum())

    def negative_log_joint(p: dict) -> jax.Array:
        values = {"theta": jax.nn.softmax(p["a"], axis=-1), "beta": jnp.exp(p["b"])}
        joint, _ = log_density(module.model, (), {**problem.train, **model_args}, values)
        return -joint / num_train

    optimiser = optax.adam(learning_rate)
    state = optimiser.init(params)

    @jax.jit
    def step(p: dict, s: optax.OptState) -> tuple[dict, optax.OptState, jax.Array]:
        loss, grad = jax.value_and_grad(negative_log_joint)(p)
        updates, s = optimiser.update(grad, s)
        return optax.apply_updates(p, updates), s, loss

    for _ in range(steps):
        params, state, loss = step(params, state)
    theta = np.asarray(jax.nn.softmax(params["a"], axis=-1))
    return theta, np.asarray(jnp.exp(params["b"])), -float(loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=Path, required=True, help="frey_rawface.npy")
    parser.add_argument("--model", default="dirichlet_exponential_nmf")
    parser.add_argument("--alpha0", type=float, nargs="+", default=[1000.0])
    parser.add_argument("--lambda0", type=float, default=0.1)
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=Path("."))
    args = parser.parse_args()
    problem = models.get(args.model).load(args.frames, seed=0, heldout_fraction=0.1)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for alpha0 in args.alpha0:
        start = time.perf_counter()
        model_args = {"K": args.K, "alpha0": alpha0, "lambda0": args.lambda0}
        theta, beta, joint = fit_map(problem, args.model, model_args, steps=args.steps,
                                     learning_rate=args.learning_rate, seed=args.seed)
        out = args.out_dir / f"map_{args.model}_alpha0{alpha0:g}.npz"
        np.savez(out, theta=theta, beta=beta)
        print(f"alpha0 = {alpha0:g}: log joint {joint:.4f} nats per training entry; theta "
              f"{theta.min():.3f}..{theta.max():.3f}, sd over frames {theta.std(0).mean():.4f}; "
              f"{time.perf_counter() - start:.0f} s -> {out}", flush=True)


if __name__ == "__main__":
    main()
