#!/usr/bin/env bash
# Regenerates the lock files, one per supported Python: every package of ".[test]" (the
# library, the workflow extra and the test tools) pinned with ==, resolved for Linux x86_64.
#   bash locks/compile.sh            # needs uv on PATH, or pip to install it in a scratch venv
# py3.11.txt keeps the published run's packages (constraints-py3.11.txt, docs/results/index.md);
# py3.12.txt and py3.13.txt take the newest releases. Install one with
#   pip install -r locks/py3.11.txt && pip install --no-deps -e .
set -euo pipefail
cd "$(dirname "$0")/.."
uv=$(command -v uv || true)
if [[ -z $uv ]]; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    python3 -m venv "$scratch/venv"
    "$scratch/venv/bin/python" -m pip install -q uv
    uv=$scratch/venv/bin/uv
fi
for version in 3.11 3.12 3.13; do
    constraints=()
    [[ -f locks/constraints-py$version.txt ]] && constraints=(-c "locks/constraints-py$version.txt")
    "$uv" pip compile pyproject.toml --extra test --python-version "$version" \
        --python-platform x86_64-unknown-linux-gnu "${constraints[@]}" \
        --custom-compile-command "bash locks/compile.sh" --quiet -o "locks/py$version.txt"
done
