"""What the repository declares about itself agrees: version pins, public APIs only."""

import ast
import os
import re
import subprocess
import sys

from advi_repro.planning.paths import REPO_ROOT


def test_the_snakefiles_min_version_is_pyprojects_snakemake_pin():
    snakefile = (REPO_ROOT / "Snakefile").read_text()
    minimum = re.search(r'min_version\("([\d.]+)"\)', snakefile).group(1)
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()  # no tomllib before Python 3.11
    pins = re.findall(r'"(snakemake(?:[<>=!~][^"]*)?)"', pyproject)  # not its plugins
    assert pins == [f"snakemake>={minimum}"]


def test_no_code_uses_hydras_private_api():
    sources = [*REPO_ROOT.glob("*/**/*.py"), *REPO_ROOT.glob("rules/*.smk"),
               REPO_ROOT / "Snakefile"]
    users = [str(p.relative_to(REPO_ROOT)) for p in sources
             if "hydra._internal" in p.read_text() and p.name != "test_packaging.py"]
    assert users == []


def _imported_packages(path):
    """The packages a Python file imports: the top-level name, or for the workflow's
    namespaced package its subpackage (``advi_repro.runners.run`` -> ``runners``)."""
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            if node.module == "advi_repro":
                modules |= {f"advi_repro.{alias.name}" for alias in node.names}
    return {m.split(".")[1] if m.startswith("advi_repro.") else m.split(".")[0]
            for m in modules}


def test_imports_run_one_way_the_report_never_imports_the_protocol():
    # runners (the timing protocol) -> planning <- analysis (the report, from files)
    for package, forbidden in (("analysis", {"runners"}), ("planning", {"runners", "analysis"})):
        for path in (REPO_ROOT / package).rglob("*.py"):
            assert not _imported_packages(path) & forbidden, path
    report_scripts = ["summarise.py", "claims.py", "runs_page.py", "plot_accuracy.py",
                      "plot_factors.py", "plot_transformations.py", "publish_results.py"]
    for name in report_scripts:
        assert "runners" not in _imported_packages(REPO_ROOT / "scripts" / name), name


def test_the_library_imports_nothing_of_the_workflow():
    for path in (REPO_ROOT / "advi").rglob("*.py"):
        assert "advi_repro" not in _imported_packages(path), path


def test_the_installed_project_adds_no_generic_top_level_name(tmp_path):
    # run where the checkout is not on sys.path, as a user's own project would
    probe = ("import importlib.util as u; "
             "print([n for n in ('models', 'runners', 'planning', 'analysis', 'advi', "
             "'advi_repro', 'advi_repro.models', 'advi_repro.runners', 'advi_repro.planning', "
             "'advi_repro.analysis') if u.find_spec(n) is not None])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['advi',", "'advi_repro',", "'advi_repro.models',",
                           "'advi_repro.runners',", "'advi_repro.planning',",
                           "'advi_repro.analysis']"]


def test_the_library_requires_only_its_own_dependencies():
    from importlib.metadata import requires

    core = {re.match(r"[\w-]+", r).group(0) for r in requires("advi-repro")
            if "extra ==" not in r}
    assert core == {"jax", "numpyro", "optax", "arviz", "numpy", "scipy", "threadpoolctl", "tqdm"}
    workflow = {re.match(r"[\w-]+", r).group(0) for r in requires("advi-repro")
                if 'extra == "workflow"' in r}
    assert {"snakemake", "hydra-core", "pandas", "matplotlib"} <= workflow


def test_the_library_declares_its_version_types_and_licence():
    from importlib.metadata import metadata, version

    import advi

    assert advi.__version__ == version("advi-repro")
    # PEP 561: the package's files (an editable install lists its source tree) carry py.typed
    assert (REPO_ROOT / "advi" / "py.typed").is_file()
    assert metadata("advi-repro")["License-Expression"] == "BSD-3-Clause"
    licence = (REPO_ROOT / "LICENSE").read_text()
    assert licence.startswith("BSD 3-Clause License")


def test_the_public_names_resolve_and_the_internal_ones_stay_in_their_modules():
    import advi
    from advi.result import CheckpointInfo, ELBOHistory
    from advi.step import ADVIState

    assert all(hasattr(advi, name) for name in advi.__all__)
    assert {"fit", "algorithm", "Options", "ADVIResult", "from_numpyro"} <= set(advi.__all__)
    for internal in (CheckpointInfo, ELBOHistory, ADVIState):
        assert not hasattr(advi, internal.__name__)
