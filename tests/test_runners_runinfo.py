"""What a run's seconds were measured on, as the report and the claims read it."""

from advi_repro.analysis.runinfo import describe_resources, timing_setup

INFO = {"environment": {"device": {"platform": "cpu", "kind": "cpu", "count": 1}},
        "resources": {"cores": 1, "cpu_ids": [3], "pinned_by": "slot", "beside": 1,
                      "host": "node1", "cpu_model": "Xeon 8481C"}}


def test_cpu_runs_are_told_apart_by_cores_and_model_and_gpus_by_device():
    assert timing_setup(INFO) == "cpu, 1 x Xeon 8481C"
    two = {**INFO, "resources": {**INFO["resources"], "cores": 2, "cpu_ids": [0, 1]}}
    assert timing_setup(two) != timing_setup(INFO)
    gpu = {**INFO, "environment": {"device": {"platform": "gpu", "kind": "NVIDIA H100"}}}
    assert timing_setup(gpu) == "gpu NVIDIA H100 (host: 1 x Xeon 8481C)"
    assert timing_setup({"environment": INFO["environment"]}) is None


def test_the_runs_page_line_names_cpus_pinning_and_company():
    assert describe_resources(INFO) == "cpu, 1 x Xeon 8481C; CPUs 3 (slot); beside 1 fit"
    free = {**INFO, "resources": {**INFO["resources"], "cpu_ids": None, "beside": 0}}
    assert describe_resources(free).endswith("not pinned; beside 0 fits")
    assert describe_resources({}) == "not recorded"


def test_a_busy_host_is_named_on_the_runs_page():
    busy = {**INFO, "resources": {**INFO["resources"], "max_load": 9.5}}
    assert describe_resources(busy).endswith("beside 1 fit; load up to 9.5")
