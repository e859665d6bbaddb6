"""The stopwatch counts its running blocks only."""

import time

import pytest

from runners.stopwatch import Stopwatch


def test_stopwatch_counts_running_blocks_and_not_the_time_between_them():
    clock = Stopwatch()
    with clock.running():
        time.sleep(0.05)
    time.sleep(0.2)  # evaluation between chunks
    with clock.running():
        time.sleep(0.05)
    assert 0.1 <= clock.elapsed_s < 0.2


def test_stopwatch_counts_a_block_that_raises():
    clock = Stopwatch()
    with pytest.raises(RuntimeError), clock.running():
        time.sleep(0.02)
        raise RuntimeError
    assert clock.elapsed_s >= 0.02


def test_stopwatch_adds_seconds_timed_elsewhere_and_refuses_negative_ones():
    clock = Stopwatch()
    clock.add(1.5)
    with clock.running():
        time.sleep(0.01)
    assert 1.51 <= clock.elapsed_s < 1.6
    with pytest.raises(ValueError, match="seconds = -1"):
        clock.add(-1)
