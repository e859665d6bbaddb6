"""Stationarity of the optimisation trace and iterate averaging (the robust preset's stop).

Dhaka, Catalina, Andersen, Magnusson, Huggins & Vehtari (2020), "Robust, accurate stochastic
optimization for variational inference" (NeurIPS), and Welandawe, Andersen, Vehtari &
Huggins (2022), "Robust, automated, and accurate black-box variational inference": with a
constant step size the iterates of stochastic optimisation become a stationary Markov chain
around the optimum; split R-hat (Gelman et al. 2013, BDA3 Section 11.4) over a window of
the trace says when that has happened, and the average of the iterates over the stationary
window (Polyak & Juditsky 1992) is much closer to the optimum than the last iterate. Where
a run stops before its iterates are stationary, the average is over the window's last
chunks, as many as balance the drift's lag against the noise (:func:`averaging_chunks`).

The trace is kept as moments per chunk of iterations (sums and sums of squares, shape
(num_chunks, P)), not as the iterates themselves, so its memory grows with K times the
number of chunks, not of iterations; a window is a whole number of chunks.
"""

from __future__ import annotations

import numpy as np
from scipy.special import chdtri, ndtri, stdtr

RHAT_THRESHOLD = 1.1
"""Split R-hat below which a monitored quantity counts as stationary (BDA3's 1.1)."""

RHAT_QUANTILE = 0.95
"""The share (a fraction) of monitored quantities that must be below
:data:`RHAT_THRESHOLD`. The maximum over all of them (2K of them: each mean and log sd) is a
much stricter test that grows with K: a few slowly mixing coordinates (an ARD regression's
precisions' log scales) keep it above the threshold thousands of iterations after the rest
are stationary and the fit's predictions have settled (measurements: benchmarks/README.md,
"Measurements behind the library's defaults")."""

RHAT_SPLITS = 4
"""The window is cut into this many consecutive pieces, each treated as one chain."""

MIN_WINDOW_CHUNKS = 2 * RHAT_SPLITS
"""Chunks run before the first stationarity check."""

TRAVEL_SD = 2.0
"""A run stopped by the ELBO's rule whose means travelled more than this many of q's standard
deviations over its window (the median over coordinates, :func:`travel`) still crawls: the
robust preset warns (:class:`advi.robust.StationarityRule`). On the validation suite and
E1-E5 the median stayed below 1.4 at every such stop (below 0.7 within 0.5 sd of the
posterior); a regression of earnings near 2e4 on an uncentred predictor, from a random
start, travelled 38-45 while 3.5-4.2 sd off, and a trend on years 1980-2020 in float32
2.57 (its slope 3.18, its log sd 0.05) while 9.4 sd off (benchmarks/README.md)."""

SETTLED_RHAT_MAX = 2.5
"""After an accepted Laplace start with its Hessian (the window is the whole trace: no
transient discarded), the ELBO's test stops no run whose split R-hat over the window is
above this: q is still moving from the mode towards the family's optimum, too slowly for
the ELBO to show it. A random-walk smoothing prior's mean-field fit stopped that way at 500
iterations, split R-hat 3.39, 12 sds off in its scale, its ELBO 30 nats below where it rose
to over the next 9,500 iterations, and a GP regression's at 2.79, 0.53 sds off; every
other such stop on the validation suite and E1 was at most 1.77, and a heavy-tailed
10-dimensional log-gamma's first at 2.25, where at 2 it was held into a false alarm
(benchmarks/README.md). Runs from a random start or above
``hessian_max_dim`` discard their transient and are not held: there the ELBO's test stops
E2 and E3 at 2.1-3.6, where R-hat's 2K quantities still drift after the predictions settled."""

DRIFT_LEVEL = 1e-3
"""False-alarm level of :func:`averaging_chunks`' test for a drift of the iterates across
the window, below which the average is over all of it."""


def window_chunks(num_chunks: int, burn_in: bool) -> int:
    """The number of trailing chunks in the stationarity window after ``num_chunks`` chunks:
    0 before :data:`MIN_WINDOW_CHUNKS`, else the second half of the trace (``burn_in``: the
    first half is the transient) or all of it, rounded down to a multiple of
    :data:`RHAT_SPLITS`."""
    if num_chunks < MIN_WINDOW_CHUNKS:
        return 0
    kept = num_chunks // 2 if burn_in else num_chunks
    return kept // RHAT_SPLITS * RHAT_SPLITS


def split_rhat(sums: np.ndarray, sumsqs: np.ndarray, chunk_len: int,
               splits: int = RHAT_SPLITS) -> np.ndarray:
    """Split R-hat of each monitored quantity over a window of chunks.

    Args:
        sums: (J, P) float, per-chunk sums of the P monitored quantities over ``chunk_len``
            iterations each; J must be a positive multiple of ``splits``.
        sumsqs: (J, P) float, per-chunk sums of their squares.
        chunk_len: iterations per chunk.
        splits: number of pieces (chains) the window is cut into.

    Returns:
        (P,) R-hat, 1.0 where a quantity did not vary at all.

    Raises:
        ValueError: when J is not a positive multiple of ``splits``.
    """
    num_chunks, size = sums.shape
    if num_chunks < splits or num_chunks % splits:
        raise ValueError(f"{num_chunks} chunks cannot be split into {splits} equal pieces")
    n = num_chunks // splits * chunk_len
    s, ss = np.asarray(sums, np.float64), np.asarray(sumsqs, np.float64)
    if num_chunks != splits:  # the pieces' sums (the robust loop passes them summed)
        s, ss = s.reshape(splits, -1, size).sum(1), ss.reshape(splits, -1, size).sum(1)
    means = s / n
    # each piece's variance, (sum of squares - n mean^2) / (n - 1), in place: a window of
    # E3's 50,500 quantities is tested after every chunk, on the host
    variances = np.multiply(s, means)
    with np.errstate(invalid="ignore"):  # inf - inf: nan, read as not stationary
        np.subtract(ss, variances, out=variances)
        np.maximum(variances, 0.0, out=variances)
        within = variances.mean(0) / (n - 1)
        between_over_n = means.var(0, ddof=1)
    # R-hat^2 = ((n - 1) / n W + B / n) / W
    ratio = np.divide(between_over_n, within, out=np.zeros_like(within), where=within > 0)
    ratio += (n - 1) / n
    ratio[np.isinf(within)] = np.nan  # inf / inf, as the pooled form gives
    return np.where(within > 0, np.sqrt(ratio, out=ratio), 1.0)


def elbo_gain(rows: np.ndarray, splits: int = RHAT_SPLITS) -> tuple[float, float]:
    """The ELBO's gain across a window, relative to its size, and the gain's standard error.

    In many dimensions the iterates of an ill-conditioned posterior (a factorisation's 25,000
    means and scales) keep drifting long after the fit's predictions have settled, so that
    split R-hat stays far above :data:`RHAT_THRESHOLD` for tens of thousands of iterations.
    The ELBO is one number whatever K: while the fit still improves, the mean ELBO of the
    window's last piece is above that of its first. The window is the second half of the
    run, so the gain is that of the last doubling of the run's length: a gain of ``g`` says
    that running twice as long bought about ``g`` (relative) and would buy about that again.

    Args:
        rows: (J,) float, the window's per-chunk mean ELBO (nats); J a positive multiple of
            ``splits``.
        splits: pieces the window is cut into.

    Returns:
        ``(gain, se)``: (mean of the last piece - mean of the first) / |mean of the window|,
        and its standard error from the chunks' spread within the two pieces (relative
        too); (nan, nan) where the mean is 0 or not finite.

    Raises:
        ValueError: when J is not a positive multiple of ``splits``.
    """
    rows = np.asarray(rows, np.float64)
    if rows.size < splits or rows.size % splits:
        raise ValueError(f"{rows.size} chunks cannot be split into {splits} equal pieces")
    pieces = rows.reshape(splits, -1)
    scale = abs(float(rows.mean()))
    if not (np.isfinite(scale) and scale > 0):
        return np.nan, np.nan
    n = pieces.shape[1]
    spread = (pieces[0].var(ddof=1) + pieces[-1].var(ddof=1)) / n if n > 1 else np.inf
    return float(pieces[-1].mean() - pieces[0].mean()) / scale, float(np.sqrt(spread)) / scale


def settled(gain: float, se: float, tol: float) -> bool:
    """Whether the ELBO has settled: the upper end of the gain's 95% interval (gain + 2 se)
    is below ``tol``, so that a noisy window (few chunks, a small ELBO) does not pass by
    chance while the fit still climbs."""
    return bool(np.isfinite(gain) and np.isfinite(se) and gain + 2 * se < tol)


def averaging_chunks(sums: np.ndarray, chunk_len: int, level: float = DRIFT_LEVEL) -> int:
    """How many trailing chunks of a window the iterate average is taken over.

    Where the run stopped by the ELBO's rule, by ``max_iter`` or at a checkpoint, the
    iterates may still drift (a factorisation's slow coordinates), and an average over a
    long window then lags them: the longer the run, the farther the average of its second
    half from where the iterates are. Each monitored quantity's chunk means are fitted by a
    line over the window (least squares: slope b_k, residual variance s_k^2 per chunk). The
    average of the last w chunks then misses the line's value at the window's end by
    b_k (w - 1) / 2 and has variance s_k^2 / w. Where the slopes are, together, beyond their
    noise (each slope's t statistic turned into the chi-square(1) value of the same tail
    probability, their sum above the chi-square quantile at ``level``), w minimises
    the estimated loss of ELBO this error costs at a Gaussian optimum, to second order:
    sum over means of error^2 / (2 sd_k^2) plus sum over log sds of error^2 (b_k^2
    estimated without bias as b_k^2 - var(b_k)). Otherwise the whole window: stationary
    iterates are best averaged over all of it (Polyak & Juditsky 1992).

    Args:
        sums: (J, 2K) float, the window's per-chunk sums of the monitored quantities (each
            mean of q, then each log standard deviation; :class:`advi.compiled.
            ChunkMoments`' ``stat``); non-finite columns are left out.
        chunk_len: iterations per chunk.
        level: the drift test's false-alarm level.

    Returns:
        the number of trailing chunks, from 1 to J (J when J < 3: no line to fit).
    """
    means = np.asarray(sums, np.float64) / chunk_len
    num = means.shape[0]
    if num < 3:
        return num
    dim = means.shape[1] // 2
    with np.errstate(over="ignore"):
        weights = np.concatenate([0.5 * np.exp(-2.0 * means[-1, dim:]), np.ones(dim)])
    finite = np.all(np.isfinite(means), axis=0) & np.isfinite(weights)
    means, weights = means[:, finite], weights[finite]
    slope, centred, spread = _line(means)
    # the residuals' sum of squares: the centred one less what the line explains
    noise = np.maximum(np.einsum("jp,jp->p", centred, centred) - slope**2 * spread,
                       0.0) / (num - 2)
    keep = noise > 0
    slope, noise, weights = slope[keep], noise[keep], weights[keep]
    # each slope's t statistic (num - 2 degrees of freedom) as the chi-square(1) value of
    # the same two-sided tail probability
    evidence = ndtri(stdtr(num - 2, -np.abs(slope) * np.sqrt(spread / noise))) ** 2
    if not keep.any() or np.sum(evidence) <= chdtri(keep.sum(), level):
        return num
    drift = np.sum(weights * (slope**2 - noise / spread))
    chunks = np.arange(1, num + 1)
    loss = drift * ((chunks - 1) / 2) ** 2 + np.sum(weights * noise) / chunks
    return int(chunks[np.argmin(loss)])


def travel(sums: np.ndarray, chunk_len: int) -> np.ndarray:
    """How far each mean of q moved over a window, in q's standard deviations: the slope of a
    least-squares line through its chunk means times the number of chunks, over the sd at
    the window's end.

    Args:
        sums: (J, 2K) float, the window's per-chunk sums of the monitored quantities (each
            mean of q, then each log standard deviation), J >= 2.
        chunk_len: iterations per chunk.

    Returns:
        (K,) float64, >= 0 (nan where a quantity is not finite).
    """
    means = np.asarray(sums, np.float64) / chunk_len
    num, dim = means.shape[0], means.shape[1] // 2
    slope = _line(means[:, :dim])[0]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.abs(slope) * num / np.exp(means[-1, dim:])


def _line(means: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The least-squares line through each column of ``means`` (J, P) against the chunk
    index: (slope per chunk (P,), the centred means (J, P), sum of squared centred
    indices)."""
    index = np.arange(means.shape[0]) - (means.shape[0] - 1) / 2
    spread = float(index @ index)
    centred = means - means.mean(0)
    return index @ centred / spread, centred, spread


def stationary(rhat: np.ndarray, quantile: float = RHAT_QUANTILE,
               threshold: float = RHAT_THRESHOLD) -> tuple[bool, float]:
    """``(stationary, statistic)``: the ``quantile`` of the R-hats and whether it is below
    ``threshold``."""
    statistic = float(np.quantile(rhat, quantile))
    return statistic < threshold, statistic
