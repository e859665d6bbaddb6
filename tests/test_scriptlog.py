"""Every Snakemake script job logs through one helper, which records an uncaught error in the
job's log (Snakemake points to the log when a job fails)."""

import re
import subprocess
import sys

from advi_repro.planning.paths import REPO_ROOT


def test_an_uncaught_error_is_in_the_log_with_its_traceback(tmp_path):
    log = tmp_path / "job.log"
    code = ("import logging; from advi_repro.planning.scriptlog import log_to; "
            f"log_to({str(log)!r}); logging.info('started'); raise ValueError('bad value 7')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1 and "ValueError: bad value 7" in result.stderr
    text = log.read_text()
    assert re.search(r"root INFO started\n.* error ERROR ValueError: bad value 7\nTraceback", text)


def test_every_script_of_a_rule_logs_through_the_helper():
    rules = "\n".join(path.read_text() for path in (REPO_ROOT / "rules").glob("*.smk"))
    scripts = sorted(set(re.findall(r'"\.\./scripts/(\w+\.py)"', rules)))
    assert len(scripts) >= 10
    for name in scripts:
        text = (REPO_ROOT / "scripts" / name).read_text()
        assert "log_to(snakemake.log[0])" in text, name
        assert "basicConfig" not in text, name
