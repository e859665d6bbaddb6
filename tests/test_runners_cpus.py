"""A fit's share of CPUs: disjoint shares side by side, released by dead fits, SLURM's own."""

import json
import os
import subprocess
import sys

import pytest

from advi_repro.runners.cpus import SLOTS_DIR, choose_cpus, cpu_model, cpu_share

USABLE = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
needs_two = pytest.mark.skipif(len(USABLE) < 2, reason="needs 2 CPUs this process may use")


def test_free_cpus_first_then_the_least_shared():
    assert choose_cpus({0, 1, 2, 3}, {"11": [0, 1]}, 2) == [2, 3]
    assert choose_cpus({0, 1, 2}, {"11": [0, 1], "12": [1, 2]}, 1) == [0]
    assert choose_cpus({0, 1}, {"11": [0], "12": [1], "13": [1]}, 2) == [0, 1]


def test_more_cores_than_cpus_is_an_error_naming_both():
    with pytest.raises(ValueError, match=r"cores = 3: a fit may use 1 to 2 CPUs"):
        choose_cpus({0, 1}, {}, 3)
    with pytest.raises(ValueError, match="cores = 0"):
        choose_cpus({0, 1}, {}, 0)


@needs_two
def test_fits_side_by_side_get_disjoint_cpus_and_see_each_other(tmp_path):
    pinned = []
    pin = lambda pid, cpus: pinned.append(sorted(cpus))  # noqa: E731
    with cpu_share(1, tmp_path, environ={}, set_affinity=pin) as first:
        held = json.loads((tmp_path / SLOTS_DIR / f"{first.host}.json").read_text())
        assert held == {str(os.getpid()): list(first.cpu_ids)}
        # a second fit (here: a second share of this process) takes the other CPU
        with cpu_share(1, tmp_path, environ={}, set_affinity=pin) as second:
            assert set(first.cpu_ids).isdisjoint(second.cpu_ids)
            assert second.beside == 1 and second.pinned_by == "slot"
    # each share pins, then gives back the CPUs the process had when it began
    assert pinned == [list(first.cpu_ids), list(second.cpu_ids), USABLE, USABLE]
    assert json.loads((tmp_path / SLOTS_DIR / f"{first.host}.json").read_text()) == {}
    record = first.recount(tmp_path)
    assert record["cores"] == 1 and record["cpu_model"] == cpu_model() != ""
    assert record["max_load"] >= 0  # the host's load average, the most seen


@needs_two
def test_the_process_gets_its_cpus_back_after_its_share(tmp_path):
    before = os.sched_getaffinity(0)
    with cpu_share(1, tmp_path, environ={}) as share:
        assert os.sched_getaffinity(0) == set(share.cpu_ids) != before
    assert os.sched_getaffinity(0) == before  # a worker that runs on is not left pinned


@needs_two
def test_a_dead_fit_holds_no_cpus_and_a_live_one_does(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host_file = None
    with cpu_share(1, tmp_path, environ={}, set_affinity=lambda *_: None) as probe:
        host_file = tmp_path / SLOTS_DIR / f"{probe.host}.json"
    lowest = USABLE[0]
    host_file.write_text(json.dumps({str(dead.pid): [lowest]}))
    with cpu_share(1, tmp_path, environ={}, set_affinity=lambda *_: None) as share:
        assert share.cpu_ids == (lowest,) and share.beside == 0
    host_file.write_text(json.dumps({str(os.getppid()): [lowest]}))
    with cpu_share(1, tmp_path, environ={}, set_affinity=lambda *_: None) as share:
        assert lowest not in share.cpu_ids and share.beside == 1


def test_under_slurm_the_jobs_own_cpus_are_its_share(tmp_path):
    pin = lambda *_: pytest.fail("a SLURM job's CPU set is not re-pinned")  # noqa: E731
    with cpu_share(len(USABLE) or 1, tmp_path, environ={"SLURM_JOB_ID": "7"},
                   set_affinity=pin) as share:
        if USABLE:
            assert share.pinned_by == "slurm" and list(share.cpu_ids) == USABLE
    assert not (tmp_path / SLOTS_DIR).exists()
