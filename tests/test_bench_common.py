"""benchmarks/bench_common.py puts this checkout on ``sys.path`` only where ``advi_repro`` is
not installed: a regular install's ``advi_repro`` (its subpackages mapped in) must not be
shadowed by the checkout's folder, which holds none of them."""

import subprocess
import sys

from bench_scripts import BENCHMARKS

from advi_repro.planning.paths import REPO_ROOT

PROBE = (f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import bench_common; "
         "import advi_repro; print(advi_repro.__file__); "
         f"print({str(REPO_ROOT)!r} in sys.path)")


def _probe(*flags, env=None, cwd):
    out = subprocess.run([sys.executable, *flags, "-c", PROBE], capture_output=True,
                         text=True, env=env, cwd=cwd, check=True)
    return out.stdout.split()


def test_an_installed_advi_repro_is_not_shadowed_by_the_checkout(tmp_path):
    installed = tmp_path / "site" / "advi_repro"
    (installed / "models").mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    (installed / "models" / "__init__.py").write_text("")
    where, checkout_on_path = _probe(env={"PYTHONPATH": str(tmp_path / "site")},
                                     cwd=tmp_path)
    assert where == str(installed / "__init__.py")
    assert checkout_on_path == "False"


def test_without_an_install_the_checkout_goes_on_the_path(tmp_path):
    # -S: no site-packages, so no installed advi_repro
    where, checkout_on_path = _probe("-S", env={}, cwd=tmp_path)
    assert where == str(REPO_ROOT / "advi_repro" / "__init__.py")
    assert checkout_on_path == "True"
