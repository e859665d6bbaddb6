"""Screenshots of a Snakemake report in headless Chromium, to check that it reads well.

Usage::

    python scripts/screenshot_report.py results/report.html /tmp/screens
    python scripts/screenshot_report.py results/report.html /tmp/screens \
        --sizes 1366x768 --views landing claims.html

Each view is the landing page (``landing``) or a result of the report, named by the end of
its path (``runs.html``, ``claims.html``, ``summaries/gmm.html``, ``fig4a_linreg_ard.png``),
opened as a click on it in the menu does: the result in the main panel, its category's
list in the sidebar. Writes ``<view>_<width>x<height>.png`` per view and window size. Needs
Chromium (Debian: ``apt-get install chromium``), found as ``chromium``,
``chromium-browser`` or ``google-chrome`` on the PATH, or given with ``--chromium``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SIZES = ("1366x768", "1920x1080")
VIEWS = ("landing", "runs.html", "claims.html", "summaries/gamma_poisson_nmf.html",
         "fig5a_gamma_poisson.png")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Opens a result as a click in the report's menu does (the report's own React app).
OPEN_RESULT = """<script>
setTimeout(function () {{
  var key = Object.keys(results).find(function (k) {{ return k.endsWith({suffix}); }});
  if (key === undefined) {{ document.title = "no result " + {suffix}; return; }}
  var category = Object.keys(categories).find(function (c) {{
    return Object.values(categories[c]).some(function (paths) {{ return paths.includes(key); }});
  }});
  app.showCategory(category);
  setTimeout(function () {{ new ToggleViewManager(app).handleSelectedResult(key); }}, 300);
}}, 300);
</script>"""


def find_chromium() -> str | None:
    """The first of :data:`BROWSERS` on the PATH, or None."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def page_for(report: str, view: str) -> str:
    """The report's HTML, opening ``view`` once loaded (``landing``: as it is)."""
    if view == "landing":
        return report
    script = OPEN_RESULT.format(suffix=json.dumps(view))
    head, tail = report.rsplit("</body>", 1)  # the last: embedded scripts contain the tag too
    return head + script + "</body>" + tail


def screenshot(chromium: str, html_file: Path, out: Path, size: str) -> None:
    """One headless screenshot of ``html_file`` at ``size`` (``WIDTHxHEIGHT``) to ``out``.

    Raises:
        ValueError: a size not of the form WIDTHxHEIGHT.
        RuntimeError: Chromium wrote no screenshot (its stderr's end is given).
    """
    if not re.fullmatch(r"\d+x\d+", size):
        raise ValueError(f"window size {size!r}: give WIDTHxHEIGHT, e.g. 1366x768")
    with tempfile.TemporaryDirectory() as profile:
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                   "--no-first-run", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                   f"--user-data-dir={profile}", f"--window-size={size.replace('x', ',')}",
                   "--virtual-time-budget=5000", f"--screenshot={out}", html_file.as_uri()]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if not out.exists():
        raise RuntimeError(f"chromium wrote no {out} (exit {result.returncode}): "
                           f"{result.stderr[-1000:]}")


def screenshots(report: Path, out_dir: Path, *, sizes: Sequence[str] = SIZES,
                views: Sequence[str] = VIEWS, chromium: str | None = None) -> list[Path]:
    """Screenshots of ``report`` for every view and size, as ``<view>_<size>.png`` in
    ``out_dir`` (slashes and dots of the view's name as ``_``).

    Raises:
        FileNotFoundError: the report, or no Chromium found.
    """
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError(f"no Chromium on the PATH (tried {', '.join(BROWSERS)}): "
                                "install it (Debian: apt-get install chromium) or pass "
                                "--chromium")
    html = Path(report).read_text()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for view in views:
            page = Path(tmp) / "report.html"
            page.write_text(page_for(html, view))
            for size in sizes:
                out = out_dir / f"{re.sub(r'[/.]', '_', view)}_{size}.png"
                screenshot(chromium, page, out, size)
                written.append(out)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the report (snakemake --report ...)")
    parser.add_argument("out_dir", type=Path, help="folder for the screenshots")
    parser.add_argument("--sizes", nargs="+", default=SIZES, help="WIDTHxHEIGHT window sizes")
    parser.add_argument("--views", nargs="+", default=VIEWS,
                        help="'landing' or the end of a result's path")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM"),
                        help="the browser binary (default: found on the PATH)")
    args = parser.parse_args(argv)
    for path in screenshots(args.report, args.out_dir, sizes=args.sizes, views=args.views,
                            chromium=args.chromium):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
