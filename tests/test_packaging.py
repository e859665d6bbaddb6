"""What the repository declares about itself agrees: version pins, public APIs only."""

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
