"""Shared pytest settings: JAX on the CPU in float32, as in CI; the real data sets or a skip."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from advi_repro.planning.datasets import fetch as fetching  # noqa: E402  (after JAX's platform is set)


def skip_unless_fetchable(folder):
    """Fetches every real data set into ``folder``, or skips the calling test when one can be
    neither copied from the mirror nor downloaded (offline), with fetch's error as the reason:
    it names the mirror option (mirror_dir) and the folder it looked in."""
    for name in fetching.FILES:
        try:
            fetching.fetch(name, folder)
        except OSError as error:
            pytest.skip(f"needs the real data sets: {error}")


@pytest.fixture
def child_env(tmp_path):
    """A fresh interpreter's minimal environment: system PATH, HOME in ``tmp_path``, JAX on
    the CPU, and this one's PYTHONPATH where the package is put on it rather than installed
    (as on a machine that cannot install it)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.fixture(scope="session")
def real_data(tmp_path_factory):
    """The real data sets are at hand (from the mirror or upstream), else the test skips."""
    skip_unless_fetchable(tmp_path_factory.mktemp("real_data"))


@pytest.fixture(scope="session")
def centred_eight_schools():
    """``(model, y, sigma)``: the centred eight schools model (a funnel: theta's prior scale
    is tau) with the classic data (Rubin 1981; Gelman et al., BDA3 Section 5.5)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    def model(y, sigma):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("schools", y.shape[0]):
            theta = numpyro.sample("theta", dist.Normal(mu, tau))
            numpyro.sample("y", dist.Normal(theta, sigma), obs=y)

    return (model, jnp.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]),
            jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]))
