"""The benchmark scripts (``benchmarks/*.py``, a folder of scripts, not a package) as
modules, for their tests."""

import importlib.util
import sys
from types import ModuleType

from advi_repro.planning.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module. The folder goes first on ``sys.path``, as when
    the script runs, so that it finds ``bench_common``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
