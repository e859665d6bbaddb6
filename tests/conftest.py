"""Shared pytest settings: JAX on the CPU in float32, as in CI, compiling without XLA's
backend optimisation (the tests' seconds go to compiling small programs, not running them;
results are the same up to rounding); the real data sets or a skip."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from runners.xla import fast_compile  # noqa: E402

fast_compile()  # before any JAX computation; the workflow tests' subprocesses inherit it

from planning.datasets import fetch as fetching  # noqa: E402  (after JAX's platform is set)


def skip_unless_fetchable(folder):
    """Fetches every real data set into ``folder``, or skips the calling test when one can be
    neither copied from the mirror nor downloaded (offline), with fetch's error as the reason:
    it names the mirror option (mirror_dir) and the folder it looked in."""
    for name in fetching.FILES:
        try:
            fetching.fetch(name, folder)
        except OSError as error:
            pytest.skip(f"needs the real data sets: {error}")


@pytest.fixture(scope="session")
def real_data(tmp_path_factory):
    """The real data sets are at hand (from the mirror or upstream), else the test skips."""
    skip_unless_fetchable(tmp_path_factory.mktemp("real_data"))
