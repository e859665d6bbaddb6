"""What both runners record at a checkpoint: the held-out score of its draws, the posterior
mean (:mod:`advi_repro.runners.posterior`) and a trace row (:mod:`advi_repro.runners.trace`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advi_repro.runners.posterior import PosteriorMean
from advi_repro.runners.scoring import LogLikelihood, RunningLogMeanExp, score_draws
from advi_repro.runners.trace import TraceWriter


def record_checkpoint(
    draws: dict[str, Any],
    *,
    iteration: int,
    wall_s: float,
    phase: str,
    scores: RunningLogMeanExp,
    fresh: bool,
    log_likelihood: LogLikelihood,
    trace: TraceWriter,
    posterior_mean: PosteriorMean | None,
    columns: Mapping[str, Any],
) -> float:
    """Scores ``draws`` and writes the checkpoint's files.

    Args:
        draws: constrained draws, site -> (S, *site_shape).
        iteration: the iteration (ADVI) or transition (MCMC) reached.
        wall_s: the run's clock, seconds.
        phase: ``advi``, ``warmup`` or ``sampling``, recorded in the posterior mean.
        scores: the held-out accumulator the draws are added to (a fresh one to score them
            alone, the run's to score every draw so far).
        fresh: whether the posterior mean forgets its earlier draws first.
        log_likelihood: draws -> held-out log-likelihoods (S, N).
        trace: gets the row ``iteration, wall_s, heldout_lpd, num_draws`` then ``columns``.
        posterior_mean: updated with the draws and rewritten, if given.
        columns: the method's own trace columns (``elbo``; ``phase, accept_prob, ...``).

    Returns:
        The checkpoint's heldout_lpd, nats per held-out observation.
    """
    score_draws(log_likelihood, draws, scores)
    if posterior_mean is not None:
        if fresh:
            posterior_mean.reset()
        posterior_mean.update(draws)
        posterior_mean.write(iteration=iteration, phase=phase)
    trace.append(iteration=iteration, wall_s=wall_s, heldout_lpd=scores.lpd(),
                 num_draws=scores.num_draws, **columns)
    return scores.lpd()
