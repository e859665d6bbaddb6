"""benchmarks/cmdstan_advi.py without CmdStan: a stand-in program that prints CmdStan's
ADVI output and writes its CSV; the seconds come from a fake clock."""

import json
import re
import stat
import sys
import textwrap

import numpy as np
import pytest
from bench_scripts import load

from advi_repro.planning.paths import REPO_ROOT

cmdstan_advi = load("cmdstan_advi")

D = 3

# CmdStan 2.35's variational output, abridged: its configuration, the gradient timing it
# prints once the data are read, the eta search, the ADVI table and the end
STDOUT = """\
method = variational
  variational
    algorithm = meanfield (Default)
Gradient evaluation took 0.0029 seconds
1000 transitions using 10 leapfrog steps per transition would take 29 seconds.
Begin eta adaptation.
Iteration:   1 / 250 [  0%]  (Adaptation)
Success! Found best value [eta = 1] earlier than expected.
Begin stochastic gradient ascent.
  iter             ELBO   delta_ELBO_mean   delta_ELBO_med   notes
   100       -15400.123             1.000            1.000
   200       -15350.456             0.502            1.000
   300       -15340.789             0.335            0.003   MEDIAN ELBO CONVERGED
Drawing a sample of size 1000 from the approximate posterior...
COMPLETED.
"""


def fake_cmdstan(folder, exit_code=0):
    """A stand-in for a compiled linreg_ard.stan: prints STDOUT, writes a CSV whose first
    row is the mean (lp__ = 0) followed by 4 draws, then exits with ``exit_code``."""
    columns = ["lp__", "log_p__", "log_g__", *[f"w.{d}" for d in range(1, D + 1)], "tau",
               *[f"alpha.{d}" for d in range(1, D + 1)]]
    rows = [[0, 0, 0, *[9.0] * D, 9.0, *[9.0] * D]]
    rows += [[0, -1.5, -0.5, *[float(s)] * D, 2.0 + s, *[0.5] * D] for s in range(4)]
    csv = "# model = linreg_ard\n" + ",".join(columns) + "\n" + "\n".join(
        ",".join(str(v) for v in row) for row in rows) + "\n# Elapsed Time\n"
    program = folder / "linreg_ard"
    program.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import sys
        args = sys.argv[1:]
        out = args[args.index("output") + 1].split("=", 1)[1]
        assert "variational" in args and "output_samples=1000" in args
        sys.stdout.write({STDOUT!r})
        open(out, "w").write({csv!r})
        sys.exit({exit_code})
        """))
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return program


def test_run_variational_times_from_the_first_gradient_line_and_reads_the_table(tmp_path):
    program = fake_cmdstan(tmp_path)
    data = cmdstan_advi.write_data(np.ones((5, D)), np.zeros(5), tmp_path / "e1.json")
    ticks = iter([100.0, 101.25, 104.0])  # start, CmdStan's first gradient line, exit
    row = cmdstan_advi.run_variational(program, data, tmp_path, seed=7, clock=ticks.__next__)
    assert row["fit_s"] == pytest.approx(2.75)
    assert row["process_s"] == pytest.approx(4.0)
    assert row["iterations"] == 300 and row["converged"]
    assert row["csv"] == tmp_path / "output-7.csv"


def test_read_draws_drops_the_mean_row_and_keeps_stan_blocks(tmp_path):
    program = fake_cmdstan(tmp_path)
    data = cmdstan_advi.write_data(np.ones((5, D)), np.zeros(5), tmp_path / "e1.json")
    row = cmdstan_advi.run_variational(program, data, tmp_path, seed=1)
    draws = cmdstan_advi.read_draws(row["csv"])
    assert draws["w"].shape == (4, D) and draws["alpha"].shape == (4, D)
    np.testing.assert_array_equal(draws["w"][:, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(draws["tau"], [2, 3, 4, 5])


def test_a_failing_cmdstan_raises_with_its_output(tmp_path):
    program = fake_cmdstan(tmp_path, exit_code=70)
    data = cmdstan_advi.write_data(np.ones((5, D)), np.zeros(5), tmp_path / "e1.json")
    with pytest.raises(RuntimeError, match="exited with 70(.|\n)*COMPLETED"):
        cmdstan_advi.run_variational(program, data, tmp_path, seed=1)


def test_write_data_matches_the_stan_program_data_block(tmp_path):
    x, y = np.arange(10.0).reshape(5, 2), np.arange(5.0)
    written = json.loads(cmdstan_advi.write_data(x, y, tmp_path / "d.json").read_text())
    program = (REPO_ROOT / "benchmarks/stan/linreg_ard.stan").read_text()
    block = re.search(r"^data \{(.*?)^\}", program, re.M | re.S).group(1)
    declared = re.findall(r"(\w+);", block)
    assert set(written) == set(declared) == {"N", "D", "x", "y"}
    assert (written["N"], written["D"]) == (5, 2)
    np.testing.assert_array_equal(written["x"], x)
    np.testing.assert_array_equal(written["y"], y)
