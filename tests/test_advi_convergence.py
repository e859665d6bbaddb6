"""Stan's relative-ELBO convergence rules."""

import pytest

from advi.convergence import ConvergenceMonitor, buffer_size, relative_change


def test_buffer_size_as_stan():
    assert buffer_size(10000, 100) == 10
    assert buffer_size(1000, 100) == 2
    assert buffer_size(100000, 100) == 100


def test_first_change_is_one_and_rules_fire():
    monitor = ConvergenceMonitor(tol_rel_obj=0.01, max_iter=300, eval_elbo=100)  # buffer 2
    first = monitor.update(100, -1000.0)
    assert first.rel_change == pytest.approx(1.0)
    assert first.converged_by is None
    second = monitor.update(200, -1001.0)
    assert second.rel_change == pytest.approx(relative_change(-1000.0, -1001.0))
    # buffer (1.0, ~0.001): mean 0.5, median = upper middle element = 0.001 -> median fires
    assert second.rel_median == pytest.approx(1.0)  # sorted [0.001, 1.0][1]
    assert second.converged_by is None
    third = monitor.update(300, -1001.5)
    assert third.converged_by == "mean and median"


def test_divergence_flag_after_ten_evaluations():
    monitor = ConvergenceMonitor(tol_rel_obj=0.01, max_iter=10000, eval_elbo=100)
    status = None
    for i in range(1, 13):
        status = monitor.update(100 * i, (-1.0) ** i * 10.0)
    assert status.may_diverge
