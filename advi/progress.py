"""The progress bar of :func:`advi.fit`: iterations done out of ``max_iter``, the latest ELBO
estimate and the stopping rule's statistic, drawn by tqdm as NumPyro's ``SVI.run`` and
``MCMC`` draw theirs.

``progress_bar=None`` (the default) shows it only where standard error is an interactive
terminal, so scripts, workflow jobs and tests print nothing; True shows it anywhere
(``tqdm.auto``: a widget in a notebook), False never.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm.auto import tqdm


class Progress:
    """A tqdm bar over the main loop's iterations, or nothing when disabled.

    Args:
        enabled: True, False, or None (on where ``file`` is an interactive terminal).
        max_iter: the iteration cap (the bar's total).
        file: where the bar is drawn (standard error by default).
    """

    def __init__(self, enabled: bool | None, max_iter: int, file: TextIO | None = None
                 ) -> None:
        stream = sys.stderr if file is None else file
        if enabled is None:
            enabled = bool(getattr(stream, "isatty", lambda: False)())
        self._bar: Any = tqdm(total=max_iter, unit="it", file=stream, disable=not enabled,
                              desc="advi", dynamic_ncols=True, leave=True)

    def update(self, iteration: int, elbo: float | None = None, statistic: str = "") -> None:
        """Move the bar to ``iteration`` and show the ELBO (nats) and ``statistic``."""
        if self._bar.disable:
            return
        self._bar.update(iteration - self._bar.n)
        parts = ([] if elbo is None else [f"elbo {elbo:.6g}"]) + ([statistic] if statistic
                                                                    else [])
        self._bar.set_postfix_str(", ".join(parts))

    def close(self) -> None:
        """Finish the bar (it stays on screen with the last values)."""
        self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
