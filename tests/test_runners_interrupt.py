"""Signals ask a fit to stop at its next checkpoint rather than stopping the process."""

import signal

import pytest

from advi_repro.runners.interrupt import Interrupted, stop_on_signals


def test_the_first_sigint_asks_to_stop_and_a_second_interrupts_at_once():
    # Python's own Ctrl-C handler, as in a terminal (a shell starts background jobs, such as
    # a pytest run with &, with SIGINT ignored, and Python then keeps it ignored)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with stop_on_signals() as stop:
            assert stop() is None
            signal.raise_signal(signal.SIGINT)
            assert stop() == "interrupted by SIGINT"
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)


def test_repeated_sigterms_are_one_request_and_the_process_lives_on():
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals() as stop:
        for _ in range(3):  # as a dying multithreaded parent sends its death signal
            signal.raise_signal(signal.SIGTERM)
        assert stop() == "interrupted by SIGTERM" and stop.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_exits_with_128_plus_the_signal(signum, code):
    assert Interrupted(signum, "stopped").exit_code == code
