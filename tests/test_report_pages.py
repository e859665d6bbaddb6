"""The report's full-width pages (analysis/report_pages.py): every fact they state about the
runs comes from the runs' info.json, and the tables are plain, escaped HTML."""

import pytest

from advi_repro.analysis.report_pages import data_lines, html_page, runs_table, scale_note


def info(method="advi_M1", seed=0, scale="smoke", **extra):
    advi = method.startswith("advi")
    config = ({"eval_draws": 100, "checkpoint_every": 500} if advi else
              {"num_warmup": 50, "num_samples": 50, "checkpoint_every": 10})
    ending = ({"converged": True, "convergence_reason": "mean"} if advi else {"stop_reason": None})
    return {"experiment": "gmm", "method": method, "label": method.upper(), "seed": seed,
            "scale": scale, "budget_s": 3.0, "iterations": 500, "final_heldout_lpd": -20.0 - seed,
            "data": {"path": "results/data/x.npy", "description": "Data: a stand-in.",
                     "seed": 0, "n_train": 100, "n_heldout": 200},
            "config": {"method": config}, **ending, **extra}


def test_the_scale_note_says_what_the_runs_ran_at():
    assert "<b>smoke</b>" in scale_note([info(), info(seed=1)])
    assert "pipeline, not the paper" in scale_note([info()])
    assert "<b>paper</b>" in scale_note([info(scale="paper")])
    assert "mix scales" in scale_note([info(), info(scale="paper")])
    with pytest.raises(ValueError, match="no runs"):
        scale_note([])


def test_the_runs_table_has_one_row_per_method_with_its_recorded_settings():
    table = runs_table([info(seed=1), info(seed=0), info("nuts")])
    assert list(table["method"]) == ["ADVI_M1", "NUTS"]
    advi, nuts = table.to_dict("records")
    assert advi["seeds"] == "0, 1" and advi["scale"] == "smoke"
    assert advi["scoring"] == "S = 100 draws from q every 500 iterations"
    assert nuts["scoring"] == "50 warmup + 50 draws, checkpoint every 10 transitions"
    assert advi["data"] == "n_train 100, n_heldout 200"  # the data seed is not a size
    assert advi["final_heldout_lpd"] == pytest.approx(-20.5)
    assert advi["ended (first seed)"] == "converged (mean rule) at iteration 500"


def test_data_lines_give_each_data_set_once_with_its_sizes():
    assert data_lines([info(), info(seed=1)]) == [
        "Data: a stand-in. Sizes: n_train = 100, n_heldout = 200."]


def test_a_page_escapes_its_table_and_formats_numbers():
    table = runs_table([info(label="<script>")])
    page = html_page("Runs & more", ["<b>note</b>"], table)
    assert "<title>Runs &amp; more</title>" in page and "<p><b>note</b></p>" in page
    assert "&lt;script&gt;" in page and "<script>" not in page
    assert '<td class="num">-20</td>' in page
    assert "width: 100%" in page  # the table spans the report's main panel


def test_given_the_checkout_the_runs_table_says_which_code_made_each_row():
    checkout = {"git_commit": "a" * 40, "git_dirty": False, "version": "0.1.0"}
    ours = {"environment": {"git_commit": "a" * 40, "git_dirty": False}}
    theirs = {"environment": {"git_commit": "b" * 40, "git_dirty": False}}
    assert "code" not in runs_table([info()]).columns  # without a checkout: no column
    table = runs_table([info(**ours), info(seed=1, **theirs), info("nuts", **ours)], checkout)
    advi, nuts = table["code"]
    assert advi == (f"seed 0: this checkout's; seed 1: made by code at {'b' * 12}, not this "
                    f"checkout's {'a' * 12}")
    assert nuts == "this checkout's"
