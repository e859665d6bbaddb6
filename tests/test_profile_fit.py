"""benchmarks/profile_fit.py's timeline: JAX's compile log lines become per-function stage
seconds, the fit's log keeps its first and last progress lines, and the CPU readings become
cores busy per window."""


import pytest
from bench_scripts import load

profile_fit = load("profile_fit")

BEGUN = 100.0


def _events():
    return [
        (99.0, "MainThread", "Finished XLA compilation of jit(stage) in 0.5 sec"),  # before
        (100.2, "MainThread", "Finished tracing chunk for jit in 0.25 sec"),
        (100.3, "MainThread", "compiling the start, iteration and ELBO functions ..."),
        (100.5, "MainThread", "Finished jaxpr to MLIR module conversion jit(chunk) in 0.1 sec"),
        (101.5, "advi-compile_0", "Finished XLA compilation of jit(chunk) in 1.0 sec"),
        (101.6, "MainThread", "compiled in 1.6 s"),
        *[(102.0 + i, "MainThread", f"iter {50 * (i + 1):6d}  elbo -1.0") for i in range(4)],
    ]


def test_each_function_gets_its_stages_and_when_its_compilation_ended():
    table = profile_fit.stages(_events(), BEGUN)
    assert set(table) == {"chunk"}  # the compilation before the fit is not the fit's
    chunk = table["chunk"]
    assert chunk["trace"] == 0.25 and chunk["lower"] == 0.1 and chunk["compile"] == 1.0
    assert chunk["ended"] == pytest.approx(1.5)


def test_the_fits_log_keeps_its_first_and_last_progress_lines():
    lines = profile_fit.milestones(_events(), BEGUN)
    texts = [text for _, text in lines]
    assert texts == ["compiling the start, iteration and ELBO functions ...",
                     "compiled in 1.6 s", "iter     50  elbo -1.0", "iter    200  elbo -1.0"]
    assert lines[0][0] == pytest.approx(0.3)


def test_cores_busy_are_cpu_seconds_per_wall_second_per_window():
    step = profile_fit.SAMPLE_EVERY_S
    # one core busy for the first window, two for the second
    samples = [(BEGUN + i * step, i * step if i <= 5 else 5 * step + 2 * (i - 5) * step)
               for i in range(11)]
    windows = profile_fit.utilisation(samples, BEGUN, BEGUN + 10 * step)
    assert [round(busy, 6) for _, busy in windows] == [1.0, 2.0]
    assert windows[1][0] == pytest.approx(5 * step)
