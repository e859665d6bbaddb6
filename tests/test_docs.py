"""The documentation holds together: every relative link in README.md, CHANGELOG.md and
docs/ resolves, the README stays a short front page whose example runs and whose test
command is the one CI runs, and the generated options table matches the library's
configuration."""

import ast
import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)=["']([^"']+)["']""")
MAX_README_LINES = 250


def _options_table_module():
    spec = importlib.util.spec_from_file_location("options_table",
                                                  ROOT / "scripts" / "options_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_fences(markdown: str) -> str:
    return re.sub(r"^(```|~~~).*?^\1", "", markdown, flags=re.DOTALL | re.MULTILINE)


def _prose(markdown: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are code)."""
    return re.sub(r"`[^`\n]*`", "", _without_fences(markdown))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but underscores and hyphens
    dropped, spaces to hyphens (`bench_advi.py` -> bench_advipy)."""
    text = re.sub(r"[`*\[\]()]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_slugs_are_githubs():
    assert _slug("`bench_advi.py`: iteration cost and cold starts") == (
        "bench_advipy-iteration-cost-and-cold-starts")
    assert _slug("How many cores (a fit) should take?") == "how-many-cores-a-fit-should-take"


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _without_fences(page.read_text()),
                          flags=re.MULTILINE)
    return {_slug(h) for h in headings}


def _relative_links(page: Path) -> list[str]:
    text = _prose(page.read_text())
    links = LINK.findall(text) + HTML_LINK.findall(text)
    return [link for link in links if not re.match(r"^[a-z][a-z0-9+.-]*:", link)]


def test_pages_found():
    assert ROOT / "README.md" in PAGES and len(PAGES) > 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for link in _relative_links(page):
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: {path} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link}: no heading with anchor #{anchor} in {path.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_documentation_index_lists_each_page_once():
    index = ROOT / "docs" / "index.md"
    listed = re.findall(r"^- \[[^\]]*\]\(([^)#]+)", index.read_text(), re.M)
    assert len(listed) > 10
    assert sorted(listed) == sorted(set(listed)), [p for p in listed if listed.count(p) > 1]


def test_link_checker_sees_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n[ok](#a-title) [gone](missing.md) `[code](nowhere.md)`\n"
                    "```\n[fenced](nowhere.md)\n```\n[web](https://example.org/x.md)\n")
    assert _relative_links(page) == ["#a-title", "missing.md"]
    assert _anchors(page) == {"a-title"}


UNCITABLE = re.compile(r"\bissues? #?\d+|\b(?:PAPER|DESIGN|STYLE)\.md\b", re.IGNORECASE)
SOURCE_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".smk", ".rst", ".toml", ".sh"}


def _source_files() -> list[Path]:
    """The repository's text sources, without outputs, caches and hidden folders."""
    skip = {"results", "outputs", "multirun", "__pycache__"}
    files = [ROOT / "Snakefile"]
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders
                         if not (d.startswith(".") or d in skip or d.endswith(".egg-info"))]
        files += [Path(folder, n) for n in names if Path(n).suffix in SOURCE_SUFFIXES]
    return files


def test_sources_cite_no_issue_numbers_or_files_the_repository_lacks():
    """Readers of a clone have the paper and public sources, not the issue tracker or the
    authors' notes."""
    this = Path(__file__).resolve()
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in _source_files() if path.resolve() != this
             for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if UNCITABLE.search(line)]
    assert not found, "\n".join(found)


MEASUREMENT_LOG = re.compile(r"\bmeasured\b|\b\d+(\.\d+)? ?ms\b", re.IGNORECASE)
"""What marks a measurement log in a docstring: the word "measured" or a timing in ms."""


def test_the_librarys_docstrings_carry_no_measurement_logs():
    """Measured numbers live in benchmarks/README.md ("Measurements behind the library's
    defaults"); a docstring says what, the shapes and units, why and the source."""
    found = [f"{path.relative_to(ROOT)}: {doc.splitlines()[0][:60]}"
             for path in sorted((ROOT / "advi").glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             for doc in [node.value] if MEASUREMENT_LOG.search(doc)]
    assert not found, "\n".join(found)


def test_uncitable_pattern_matches_what_it_should():
    assert UNCITABLE.search("(issue 12)") and UNCITABLE.search("see PAPER.md")
    assert UNCITABLE.search("Issue #4") and not UNCITABLE.search("an issue with numbers")


def test_readme_is_a_short_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    pytest_lines = [line.strip() for line in ci.splitlines()
                    if line.strip().startswith("python -m pytest")]
    assert pytest_lines, ".ci/run runs no 'python -m pytest' command"
    assert 'python -m pip install -q -e ".[test]"' in ci
    for command in pytest_lines:
        assert f'pip install -e ".[test]" && {command}' in readme, command


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(),
                      flags=re.DOTALL | re.MULTILINE)


def _check_poisson_example(block: str, name: str) -> None:
    """Runs ``block`` as printed, in a fresh namespace (every name it uses is its own): the
    Poisson rate's draws match its posterior Gamma(1 + sum x, 1 + n) (exponential prior of
    rate 1, conjugate)."""
    namespace: dict = {}
    exec(compile(block, name, "exec"), namespace)  # noqa: S102
    lam = np.asarray(namespace["draws"]["lam"])
    x = np.asarray(namespace["x"])
    shape, rate = 1 + x.sum(), 1 + x.size
    assert lam.shape == (1000,) and np.all(lam > 0)
    assert abs(lam.mean() - shape / rate) < np.sqrt(shape) / rate  # within one posterior sd


def test_readme_example_runs_and_recovers_the_exact_posterior():
    blocks = _python_blocks(ROOT / "README.md")
    assert len(blocks) == 1, "README.md should hold exactly one Python example"
    _check_poisson_example(blocks[0], "README.md")


def test_the_library_pages_first_example_runs_as_printed():
    _check_poisson_example(_python_blocks(ROOT / "docs" / "library" / "index.md")[0],
                           "docs/library/index.md")


def test_options_page_is_generated_from_the_code():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "options_table.py")],
                            capture_output=True, text=True, check=True, cwd=ROOT)
    committed = (ROOT / "docs" / "library" / "options.md").read_text()
    assert committed == result.stdout, (
        "docs/library/options.md is stale: run "
        "`python scripts/options_table.py --write docs/library/options.md`")


def test_option_meanings_split_outside_parentheses():
    doc = ("Args:\n    **options: any of :data:`OPTIONS`, defaults in :data:`PRESETS`:\n"
           "        eta (a scale; None searches (100, 10)); max_iter; stop (\"rhat\").\n\n"
           "Returns:\n    x\n")
    meanings = _options_table_module().option_meanings(doc)
    assert meanings == {"eta": "a scale; None searches (100, 10)", "max_iter": "",
                        "stop": '"rhat"'}


@dataclasses.dataclass(frozen=True)
class _Preset:
    """Options.

    Attributes:
        eta: step scale, or None to
            search.
        stop: rule (:mod:`advi.stationarity`, ``"rhat"``).

    Raises:
        ValueError: never.
    """

    eta: float | None = None
    stop: str = "relative_elbo"


def test_options_table_reads_dataclass_presets_and_their_docstring():
    module = _options_table_module()
    presets = {"stan": _Preset(), "robust": _Preset(eta=0.1, stop="rhat")}
    meanings = module.meanings_for(presets, fit_doc="")
    assert meanings == {"eta": "step scale, or None to search.",
                        "stop": 'rule (:mod:`advi.stationarity`, ``"rhat"``).'}
    page = module.render(presets, ("eta", "stop"), meanings)
    assert '| `eta` | `None` | **`0.1`** | step scale, or None to search. |' in page
    assert '| `stop` | `"relative_elbo"` | **`"rhat"`** | rule (`advi.stationarity`, `"rhat"`). |' \
        in page


def test_options_table_reads_mapping_presets_and_fits_docstring():
    module = _options_table_module()
    presets = {"stan": {"eta": None}, "robust": {"eta": 0.1}}
    fit_doc = "Args:\n    **options: any of :data:`OPTIONS`: eta (step scale).\n"
    assert module.meanings_for(presets, fit_doc) == {"eta": "step scale"}
