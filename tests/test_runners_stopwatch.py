"""The stopwatch counts its running blocks only (on a fake clock: no real seconds)."""

import pytest

from advi_repro.runners.stopwatch import Stopwatch


class _FakeClock:
    """Seconds that pass only when the test advances them."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_stopwatch_counts_running_blocks_and_not_the_time_between_them():
    time = _FakeClock()
    clock = Stopwatch(clock=time)
    with clock.running():
        time.now += 0.05
    time.now += 0.2  # evaluation between chunks
    with clock.running():
        time.now += 0.05
    assert clock.elapsed_s == pytest.approx(0.1)


def test_stopwatch_counts_a_block_that_raises():
    time = _FakeClock()
    clock = Stopwatch(clock=time)
    with pytest.raises(RuntimeError), clock.running():
        time.now += 0.02
        raise RuntimeError
    assert clock.elapsed_s == pytest.approx(0.02)


def test_stopwatch_adds_seconds_timed_elsewhere_and_refuses_negative_ones():
    time = _FakeClock()
    clock = Stopwatch(clock=time)
    clock.add(1.5)
    with clock.running():
        time.now += 0.01
    assert clock.elapsed_s == pytest.approx(1.51)
    with pytest.raises(ValueError, match="seconds = -1"):
        clock.add(-1)

