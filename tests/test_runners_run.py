"""A run's log says how its wall-clock divided."""

from advi_repro.runners.run import wall_clock_split


def test_the_wall_clock_split_adds_up_to_the_total():
    info = {"total_s": 236.1, "compile_s": 19.0, "wall_s": 15.0, "checkpoint_s": 200.2}
    assert wall_clock_split(info) == (
        "wall-clock 236.1 s = 19.0 s compiling + 15.0 s inference (the clock) + 200.2 s "
        "scoring and writing checkpoints + 1.9 s loading data and the rest")
