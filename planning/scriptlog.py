"""The log of a Snakemake ``script:`` job: its progress and, when it fails, its error.

Snakemake points to a rule's log file when a job fails, but a script's uncaught exception
goes to Snakemake's own output only; :func:`log_to` writes it into the log as well.
"""

from __future__ import annotations

import logging
import os
import sys
from types import TracebackType

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
"""As the fit jobs' logs (``hydra.job_logging`` in ``conf/config.yaml``)."""


def log_to(path: str | os.PathLike) -> None:
    """Sends INFO and above to ``path``, and an uncaught exception too (``... error ERROR
    <type>: <message>`` and its traceback) before Python prints it to stderr as usual."""
    logging.basicConfig(filename=path, level=logging.INFO, format=LOG_FORMAT)
    default_hook = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException,
             traceback: TracebackType | None) -> None:
        logging.getLogger("error").error("%s: %s", kind.__name__, error,
                                         exc_info=(kind, error, traceback))
        default_hook(kind, error, traceback)

    sys.excepthook = hook
