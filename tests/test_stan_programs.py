"""benchmarks/stan/*.stan and benchmarks/stan_hmc_compare.py without CmdStan: the data the
script exports are what each Stan program declares, in the shapes it declares, and the
script's reading of Stan's outputs (unconstrained order, CSV columns) is Stan's layout."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bench_scripts import load
from numpyro.infer.util import initialize_model

from advi_repro import models
from advi_repro.planning.paths import REPO_ROOT

STAN_DIR = REPO_ROOT / "benchmarks" / "stan"
compare = load("stan_hmc_compare")

RNG = np.random.default_rng(0)
U, P, K = 5, 7, 3  # frames, pixels, factors


def experiment(name):
    """A smoke-size :class:`Experiment` of model ``name`` with random data."""
    module = models.get(name)
    if name == "gmm":
        train = {"x": jnp.asarray(RNG.normal(size=(11, 4)), jnp.float32)}
        args = {"K": K, "alpha0": 10.0, "sigma_mu": 0.1, "sigma_sigma": 1.0}
    else:
        y = RNG.poisson(5.0, size=(U, P)).astype(np.float32)
        mask = RNG.uniform(size=(U, P)) > 0.3
        train = {"y": jnp.asarray(y), "mask": jnp.asarray(mask), "log_y_factorial": None}
        args = ({"K": K, "a0": 1.0, "b0": 1.0, "c0": 1.0, "d0": 1.0}
                if name == "gamma_poisson_nmf" else {"K": K, "alpha0": 1000.0, "lambda0": 0.1})
    return compare.Experiment(name=name, model_name=name, module=module, model_args=args,
                              train=train, heldout={}, num_heldout=0)


def declared_data(program):
    """The names in a Stan program's data block."""
    text = (STAN_DIR / f"{program}.stan").read_text()
    block = re.search(r"^data \{(.*?)^\}", text, re.S | re.M).group(1)
    return {re.search(r"(\w+);", line).group(1) for line in block.splitlines()
            if line.strip() and not line.strip().startswith("//")}


@pytest.mark.parametrize("name", ["gamma_poisson_nmf", "dirichlet_exponential_nmf", "gmm"])
def test_the_exported_data_are_what_the_program_declares(name):
    exp = experiment(name)
    data = compare.stan_data(exp)
    assert set(data) == declared_data(name)
    if name == "gmm":
        assert (data["N"], data["D"], data["K"]) == (11, 4, K)
        np.testing.assert_array_equal(np.array(data["x"]), np.asarray(exp.train["x"]))
        return
    mask, y = np.asarray(exp.train["mask"]), np.asarray(exp.train["y"])
    assert (data["U"], data["I"], data["K"], data["N"]) == (U, P, K, mask.sum())
    assert len(data["frame"]) == len(data["pixel"]) == len(data["y"]) == data["N"]
    frame, pixel = np.array(data["frame"]) - 1, np.array(data["pixel"]) - 1
    assert mask[frame, pixel].all()  # training entries only, 1-based
    np.testing.assert_array_equal(np.array(data["y"]), y[frame, pixel])


@pytest.mark.parametrize("name", ["gamma_poisson_nmf", "dirichlet_exponential_nmf", "gmm"])
def test_stan_order_follows_the_programs_parameters(name):
    """Declaration order, arrays of vectors vector by vector, matrices column by column."""
    exp = experiment(name)
    text = (STAN_DIR / f"{name}.stan").read_text()
    block = re.search(r"^parameters \{(.*?)^\}", text, re.S | re.M).group(1)
    declared = [re.search(r"(\w+);", line).group(1) for line in block.splitlines()
                if line.strip()]
    assert declared == [site for site, _ in compare.STAN_LAYOUT[name]]
    model = functools.partial(exp.module.model, **exp.model_args)
    info = initialize_model(jax.random.PRNGKey(0), model, model_kwargs=exp.train)
    z = {site: np.arange(np.size(v), dtype=float).reshape(np.shape(v))
         for site, v in info.param_info.z.items()}
    order = compare.to_stan_order(name, z)
    assert order.size == sum(v.size for v in z.values())
    first = z[declared[0]]
    np.testing.assert_array_equal(order[: first.size], first.ravel())
    last = z[declared[-1]]  # a matrix: column-major
    np.testing.assert_array_equal(order[-last.size:], last.T.ravel())


def test_a_cmdstan_csv_is_read_into_arrays_by_its_column_names(tmp_path):
    csv = tmp_path / "output.csv"
    names = ["lp__", "accept_stat__", "stepsize__", "theta.1.1", "theta.2.1", "theta.1.2",
             "theta.2.2", "tau"]
    csv.write_text("# comment\n" + ",".join(names) + "\n"
                   "-5,0.5,0.01,1,2,3,4,9\n# Adaptation terminated\n-4,1,0.02,5,6,7,8,9\n"
                   "-3,1,0.02,1,2")  # the last line is being written: left out
    rows = list(compare.read_stan_csv(csv))
    assert len(rows) == 2
    stats, draws = rows[1]
    assert stats == {"lp__": -4.0, "accept_stat__": 1.0, "stepsize__": 0.02}
    np.testing.assert_array_equal(draws["theta"], [[5, 7], [6, 8]])
    assert draws["tau"].shape == () and draws["tau"] == 9
