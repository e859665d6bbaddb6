"""Atomic folders: a run's folder holds one run, whole, whether its rerun finishes or not;
files as readable as any the user writes; strict JSON."""

import json
import os
import stat
import subprocess

import numpy as np
import pytest

from advi_repro.planning.files import atomic_open, partial_path, staged_dir, write_json


def write(folder, **files):
    for name, text in files.items():
        (folder / name).write_text(text)


def contents(folder):
    return {path.name: path.read_text() for path in sorted(folder.iterdir())}


@pytest.fixture
def finished(tmp_path):
    """A folder written by a block that finished."""
    with staged_dir(tmp_path / "seed0") as work:
        write(work, **{"trace.csv": "old trace", "info.json": "old info"})
    return tmp_path / "seed0"


def test_a_finished_block_replaces_the_folder_whole(finished):
    assert contents(finished) == {"info.json": "old info", "trace.csv": "old trace"}
    with staged_dir(finished) as work:
        assert work != finished and not list(work.iterdir())  # fresh and empty
        write(work, **{"trace.csv": "new trace"})
        assert contents(finished)["trace.csv"] == "old trace"  # untouched until the end
    assert contents(finished) == {"trace.csv": "new trace"}  # no old info.json beside it
    assert sorted(p.name for p in finished.parent.iterdir()) == ["seed0"]


def test_an_interrupted_block_leaves_the_folder_and_keeps_its_files_as_partial(finished):
    with pytest.raises(KeyboardInterrupt), staged_dir(finished) as work:
        write(work, **{"trace.csv": "partial trace"})
        raise KeyboardInterrupt
    assert contents(finished) == {"info.json": "old info", "trace.csv": "old trace"}
    partial = partial_path(finished)
    assert partial.name == "seed0.partial" and contents(partial) == {"trace.csv": "partial trace"}
    assert sorted(p.name for p in finished.parent.iterdir()) == ["seed0", "seed0.partial"]
    with staged_dir(finished) as work:  # a later run that finishes removes the partial one
        write(work, **{"trace.csv": "new trace"})
    assert not partial.exists()


def test_folders_of_a_killed_process_are_removed_and_a_live_ones_kept(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = tmp_path / f".seed0.running-{gone.pid}-abc"
    live = tmp_path / f".seed0.running-{os.getpid()}-xyz"
    for folder in (orphan, live):
        folder.mkdir()
    with staged_dir(tmp_path / "seed0") as work:
        write(work, **{"trace.csv": "t"})
    assert not orphan.exists() and live.exists()


@pytest.fixture(params=[0o022, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def test_files_and_run_folders_get_the_mode_the_umask_gives(tmp_path, umask):
    with staged_dir(tmp_path / "seed0") as work:
        with atomic_open(work / "trace.csv") as f:
            f.write("t")
        write_json(work / "info.json", {"a": 1})
    folder = tmp_path / "seed0"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask
    for name in ("trace.csv", "info.json"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o666 & ~umask


def refuse(constant):
    raise ValueError(f"not strict JSON: {constant}")


def test_info_json_is_strict_json_with_non_finite_numbers_as_null(tmp_path):
    path = tmp_path / "info.json"
    write_json(path, {"pareto_khat": float("inf"), "elbo": [np.nan, -1.5, np.float32(-np.inf)],
                      "eta": np.float32(0.5), "iterations": 7, "converged": True})
    info = json.loads(path.read_text(), parse_constant=refuse)
    assert info == {"pareto_khat": None, "elbo": [None, -1.5, None], "eta": 0.5,
                    "iterations": 7, "converged": True}
