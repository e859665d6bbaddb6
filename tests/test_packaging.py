"""What the repository declares about itself agrees: version pins, public APIs only."""

import ast
import re

from planning.paths import REPO_ROOT


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
    """The top-level names a Python file imports."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_imports_run_one_way_the_report_never_imports_the_protocol():
    # runners (the timing protocol) -> planning <- analysis (the report, from files)
    for package, forbidden in (("analysis", {"runners"}), ("planning", {"runners", "analysis"})):
        for path in (REPO_ROOT / package).rglob("*.py"):
            assert not _imported_packages(path) & forbidden, path
    report_scripts = ["summarise.py", "claims.py", "runs_page.py", "plot_accuracy.py",
                      "plot_factors.py", "plot_transformations.py", "publish_results.py"]
    for name in report_scripts:
        assert "runners" not in _imported_packages(REPO_ROOT / "scripts" / name), name


def test_no_installed_package_shadows_a_widely_used_one():
    # pip install -e . installs these top-level packages (pyproject's packages.find)
    include = re.search(r"include = \[([^\]]*)\]", (REPO_ROOT / "pyproject.toml").read_text())
    installed = {name.strip(' "*') for name in include.group(1).split(",")}
    assert installed == {"advi", "models", "runners", "planning", "analysis"}
    assert not installed & {"datasets", "data", "utils", "config", "workflow", "report"}
    assert all((REPO_ROOT / name / "__init__.py").is_file() for name in installed)
