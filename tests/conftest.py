"""Shared pytest settings: JAX on the CPU in float32, as in CI."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
