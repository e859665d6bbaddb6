"""Another revision's ``advi`` package, for timing the code as it is against the code as it
was, in alternating fresh processes on the same machine (``bench_advi.py --baseline REV``).

A ratio of two timings taken hours apart compares machines as much as code (CHANGELOG.md
has a case: the same revision's cold fit about 1.5x as slow on the same kind of machine
later the same day). Run side by side, minutes apart, the two revisions meet the same load.

The revision is checked out with ``git worktree add --detach`` into a temporary folder,
which is removed afterwards. Only its ``advi`` package is exposed (a folder holding one
symbolic link, to go first on ``sys.path``): the models, data and benchmark helpers stay
the current ones, so the two revisions fit the same model to the same data.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


class BaselineError(ValueError):
    """The revision cannot be used as a baseline (the message says why)."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)


def resolve(repo: Path, rev: str) -> str:
    """The full commit hash of ``rev`` in the git repository ``repo``.

    Raises:
        BaselineError: ``repo`` is not a git work tree, ``rev`` names no commit there, or
            that commit has no ``advi`` package.
    """
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if found.returncode != 0:
        raise BaselineError(f"--baseline {rev!r}: not a commit of the git repository {repo} "
                            "(give a commit hash, tag or branch; a shallow clone may lack "
                            "old commits: git fetch --unshallow)")
    commit = found.stdout.strip()
    if _git(repo, "cat-file", "-e", f"{commit}:advi/__init__.py").returncode != 0:
        raise BaselineError(f"--baseline {rev!r} ({commit[:10]}) has no advi package")
    return commit


@contextlib.contextmanager
def checkout(repo: Path, rev: str) -> Iterator[Path]:
    """Check out ``rev`` of ``repo`` and yield a folder whose only entry is that revision's
    ``advi`` package: put it first on ``sys.path`` and ``import advi`` loads the old code.

    Raises:
        BaselineError: as :func:`resolve`, or when ``git worktree add`` fails.
    """
    commit = resolve(repo, rev)
    with tempfile.TemporaryDirectory(prefix="advi-baseline-") as folder:
        tree, exposed = Path(folder) / "tree", Path(folder) / "path"
        added = _git(repo, "worktree", "add", "--detach", str(tree), commit)
        if added.returncode != 0:
            raise BaselineError(f"--baseline {rev!r}: git worktree add failed: "
                                f"{added.stderr.strip()}")
        try:
            exposed.mkdir()
            (exposed / "advi").symlink_to(tree / "advi", target_is_directory=True)
            yield exposed
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))
