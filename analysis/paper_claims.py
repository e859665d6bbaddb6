"""What the paper claims, experiment by experiment (E0 to E6: Figures 3, 4a, 4b, 5a/5c,
5b/5d, 1a, 1b), and the thresholds by which this reproduction judges each claim
(:mod:`advi_repro.analysis.claims`)."""

from __future__ import annotations

from typing import NamedTuple


class Claim(NamedTuple):
    """One claim of the paper and its criterion; an experiment's YAML names the claim it
    tests (``claim_id``).

    Attributes:
        id: ``E0`` ... ``E6``.
        figure: the paper's figure.
        text: the paper's claim.
        criterion: how this reproduction decides whether it held.
    """

    id: str
    figure: str
    text: str
    criterion: str


CLAIMS: tuple[Claim, ...] = (
    Claim("E0", "Fig. 3",
          "The Gaussian in zeta = log lambda induces a non-Gaussian q on lambda > 0 that "
          "matches the posterior.",
          "q is the KL-optimal Gaussian in zeta: KL(q || p) within 0.01 nats of its minimum"),
    Claim("E1", "Fig. 4a",
          "All methods reach the same accuracy; M = 1 suffices and is fastest.",
          "every final heldout_lpd within 1% of NUTS's; ADVI first to within 1% of NUTS's "
          "final value; M = 1 there before M = 10"),
    Claim("E2", "Fig. 4b",
          "All methods reach the same accuracy; ADVI is fastest.",
          "every final heldout_lpd within 1% of NUTS's; ADVI first to within 1% of NUTS's "
          "final value"),
    Claim("E3", "Fig. 5a, 5c",
          "ADVI is an order of magnitude faster than NUTS.",
          "ADVI within 1% of NUTS's final heldout_lpd at least 10x sooner than NUTS"),
    Claim("E4", "Fig. 5b, 5d",
          "NUTS struggles; ADVI finds sparse factors (at least 10x faster).",
          "ADVI within 1% of NUTS's final heldout_lpd at least 10x sooner than NUTS (the "
          "factors are judged by eye in Fig. 5d and its caption, not here)"),
    Claim("E5", "Fig. 1a",
          "ADVI is orders of magnitude faster; NUTS struggles, HMC fails.",
          "ADVI within 1% of NUTS's final heldout_lpd at least 100x sooner than NUTS"),
    Claim("E6", "Fig. 1b",
          "Stochastic ADVI with B >= 500 reaches high accuracy; smaller B is suboptimal.",
          "every B >= 500 ends with a higher heldout_lpd than every B < 500"),
)
"""The paper's claims, in the order of the experiments E0 to E6."""

SPEED_UP = {"E3": 10.0, "E4": 10.0, "E5": 100.0}
"""The speed-up of ADVI over NUTS each speed claim asks for."""
MINIBATCH_THRESHOLD = 500
"""E6: the paper names B = 500 as the size from which stochastic ADVI is accurate."""
MAX_EXCESS_KL = 0.01
"""E0: nats by which KL(q || p) may exceed its minimum over Gaussians in zeta."""
