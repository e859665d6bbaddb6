"""The false-alarm counts of benchmarks/bench_accuracy.py and bench_scale.py."""

import math

from bench_scripts import load

bench_accuracy = load("bench_accuracy")
bench_scale = load("bench_scale")


def test_alarms_count_good_fits_that_warn_and_far_fits_that_do_not():
    Score = bench_accuracy.Score
    scores = [Score(0.1, 10, "rhat", worst=0.3, warned=False),   # good, silent
              Score(0.5, 10, "rhat", worst=0.9, warned=True),    # good, warned: false alarm
              Score(3.0, 10, "median", worst=5.0, warned=True),  # off, warned
              Score(2.0, 10, "median", worst=1.5, warned=False),  # off, silent: a miss
              Score(math.nan, 0, "ADVIError")]                    # failed: neither
    assert bench_accuracy.alarms(scores) == (1, 2, 1, 2)


def test_a_silent_miss_is_more_than_one_sd_off_without_a_warning():
    assert bench_scale.silent_miss({"sds_off": 1.5, "warned": False})
    assert not bench_scale.silent_miss({"sds_off": 1.5, "warned": True})
    assert not bench_scale.silent_miss({"sds_off": 0.5, "warned": False})
    assert bench_scale.exact(bench_scale.np.array([1.0, 3.0]))[0] == 2.0
