"""The one main loop of :func:`advi.fit`: chunks of iterations, a stopping rule, a restart
policy, checkpoints and the history, timed by an injectable clock.

Both presets run :func:`drive`; they differ in two parts only:

- the :class:`StoppingRule`, which looks at each chunk's end state (Stan's relative-ELBO
  test, :class:`advi.convergence.RelativeELBORule`; the robust preset's split R-hat of the
  iterates, :class:`advi.robust.StationarityRule`), says what to record and whether the run
  has converged, and gives the parameters to report (the last iterate, or the iterates'
  average);
- the :class:`RestartPolicy`: after non-finite draws beyond the redraw budget, the next
  smaller eta (Stan's grid; eta / 10), or None to stop with :class:`advi.ADVIError`.

Seconds come from ``clock`` (``time.perf_counter`` unless a test injects a fake one):
each chunk and the rule's look at it are counted; the checkpoint hook is not, nor is a
function compiled on first need during a chunk (the runner's ``lazy_compile_s``, on the
same clock: :meth:`advi.compiled.CompiledADVI.use_clock`).
"""

from __future__ import annotations

import inspect
import logging
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import jax
import numpy as np

from .progress import Progress
from .result import ADVIError, Approximation, CheckpointInfo, ELBOHistory
from .step import ADVIState, fresh_state

logger = logging.getLogger("advi")

Clock = Callable[[], float]
"""``clock() -> seconds`` on a monotonic scale (``time.perf_counter``)."""

_PACKAGE = str(Path(__file__).parent)


def recorded(fn: Callable[..., Any], *args: Any) -> tuple[Any, list]:
    """``fn(*args)`` and the warnings it issued, recorded, not shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return fn(*args), list(caught)


def emitted(caught: list, result: Any) -> Any:
    """``result``, after issuing the recorded warnings ``caught`` again."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


def warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """A warning of ``category`` attributed to the first caller outside this package (as
    pandas' ``find_stack_level`` does), whatever the depth it is raised at."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class Verdict(NamedTuple):
    """What a stopping rule makes of one chunk's end state.

    Attributes:
        failure: the cause when the state cannot be used (restart), else None.
        row: the rule's columns of a history row, or None (no row this chunk).
        reason: the convergence reason when the rule fired, else None.
        note: a warning to issue and keep in the result, or None.
    """

    failure: str | None = None
    row: Row | None = None
    reason: str | None = None
    note: str | None = None


class Row(NamedTuple):
    """A stopping rule's columns of one history row (nan where it has none)."""

    elbo: float
    rel_change: float = math.nan
    rel_mean: float = math.nan
    rel_median: float = math.nan
    rhat: float = math.nan


class StoppingRule(Protocol):
    """The part of the loop that decides when to stop (module docstring)."""

    moments: bool  # the chunk returns (state, ChunkMoments)
    reports_rhat: bool  # the history has a max_rhat column
    fallback_text: str  # where a restart starts from, for messages
    max_iter_note: str  # the warning when max_iter is reached

    def observe(self, state: ADVIState, moments: Any) -> Verdict: ...
    def estimate(self, state: ADVIState) -> Any: ...
    def fallback(self, state: ADVIState) -> ADVIState: ...
    def restarted(self) -> None: ...
    def describe(self, row: Row) -> str: ...


MAX_ITER_PREFIX = "max_iter="
"""How every stopping rule's ``max_iter_note`` begins (the warning that max_iter was reached
before the rule converged)."""


class RestartPolicy(NamedTuple):
    """``next_eta(eta) -> smaller eta or None``; ``limit`` says where it stops, for the
    error message. At iteration 0, where no eta can mend the initial q's own non-finite
    draws, the first ``narrowings`` restarts keep eta and start from ``narrow(params)``
    instead (a q with smaller scales), where ``narrow`` is given."""

    next_eta: Callable[[float], float | None]
    limit: str
    narrow: Callable[[Any], Any] | None = None
    narrowings: int = 0


class Outcome(NamedTuple):
    """What :func:`drive` hands to ``make_result``: the run's end and its history."""

    params: Any
    state: ADVIState
    eta: float
    converged: bool
    reason: str
    history: ELBOHistory
    wall_s: float
    restarts: tuple[tuple[int, float, float], ...]
    notes: tuple[str, ...]


class _Record:
    """The history so far."""

    def __init__(self, eta: float, wall_s: float) -> None:
        self.eta, self.wall_s = eta, wall_s
        self.rows: list[tuple[int, Row, float, float]] = []
        self.restarts: list[tuple[int, float, float]] = []
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)
        warn(message)

    def elbo(self) -> float | None:
        return self.rows[-1][1].elbo if self.rows else None

    def outcome(self, rule: StoppingRule, params: Any, state: ADVIState, converged: bool,
                reason: str) -> Outcome:
        rows = self.rows
        column = {name: np.array([getattr(r, name) for _, r, _, _ in rows], float)
                  for name in Row._fields}
        history = ELBOHistory(
            np.array([it for it, _, _, _ in rows], int), column["elbo"], column["rel_change"],
            column["rel_mean"], column["rel_median"],
            np.array([eta for _, _, eta, _ in rows], float),
            np.array([s for _, _, _, s in rows], float),
            column["rhat"] if rule.reports_rhat else None)
        return Outcome(params, state, self.eta, converged, reason, history, self.wall_s,
                       tuple(self.restarts), tuple(self.notes))


def checkpoint_due(iteration: int, previous: int, chunk_len: int,
                   checkpoint_every: int) -> bool:
    """Whether the checkpoint hook runs after the chunk that took the run from ``previous``
    to ``iteration``: when it reached or passed a multiple of ``checkpoint_every`` (every
    ``checkpoint_every`` iterations where the chunks divide it; at the first chunk end past
    each multiple where they do not: the robust preset's chunks are its stop's
    ``eval_elbo``) and, before the first multiple, at ``chunk_len`` times 1, 2, 4, ... (so
    that a trace plotted against log time, as the paper's figures are, shows a fit's early
    progress: with E3's 500, the robust fit is first scored after one chunk, 50
    iterations, not 500)."""
    if iteration // checkpoint_every > previous // checkpoint_every:
        return True
    if iteration >= checkpoint_every or iteration % chunk_len:
        return False
    doublings = iteration // chunk_len
    return doublings & (doublings - 1) == 0


def drive(
    runner: Any,
    state: ADVIState,
    eta: float,
    *,
    rule: StoppingRule,
    policy: RestartPolicy,
    run_key: Any,
    chunk_len: int,
    max_iter: int,
    checkpoint_every: int,
    checkpoint: Callable[[CheckpointInfo], bool | None] | None,
    clock: Clock,
    wall_s: float,
    make_result: Callable[[Outcome, bool], Any],
    progress: Progress | None = None,
) -> Any:
    """Run chunks of ``chunk_len`` iterations (:class:`advi.compiled.CompiledADVI`) until
    ``rule`` converges, ``max_iter`` or the hook returns True; ``make_result(outcome,
    final)`` builds what is returned (``final`` False: for ``ADVIError.result``); each
    chunk moves ``progress`` (:class:`advi.progress.Progress`), when given.

    Raises:
        ADVIError: when non-finite draws persist and ``policy`` has no smaller eta; its
            ``result`` holds the state restarts would have started from and the history.
    """
    rec, last_hook, reason, converged = _Record(eta, wall_s), -1, "max_iter", False
    it = int(state.iteration)
    while it < max_iter:
        tick, previous, compiled_s = clock(), it, runner.lazy_compile_s
        out = runner.run(state, rec.eta, run_key, len(rec.restarts),
                         min(chunk_len - it % chunk_len, max_iter - it),
                         narrowable=_narrows(policy, rec, it))
        new_state, moments = out if rule.moments else (out, None)
        # what the host reads of the chunk, fetched in one wait for the device
        failed, iteration, moments = jax.device_get((new_state.failed, new_state.iteration,
                                                     moments))
        verdict = (Verdict(failure="non-finite gradients beyond 10*grad_samples redraws")
                   if bool(failed) else rule.observe(new_state, moments))
        rec.wall_s += clock() - tick - (runner.lazy_compile_s - compiled_s)
        if verdict.failure is not None:
            state = _restart(runner, rule, policy, rec, state, verdict.failure, make_result)
            it = int(state.iteration)
            continue
        state, it = new_state, int(iteration)
        if verdict.note is not None:
            rec.note(verdict.note)
        if verdict.row is not None:
            rec.rows.append((it, verdict.row, rec.eta, rec.wall_s))
            logger.info("iter %6d  elbo %12.6g  %s  eta %g  %.2f s", it, verdict.row.elbo,
                        rule.describe(verdict.row), rec.eta, rec.wall_s)
        if progress is not None:
            row = verdict.row
            progress.update(it, *(() if row is None else (row.elbo, rule.describe(row))))
        if verdict.reason is not None:
            reason, converged = verdict.reason, True
        if checkpoint is not None and (checkpoint_due(it, previous, chunk_len, checkpoint_every)
                                       or converged):
            last_hook = it
            if checkpoint(CheckpointInfo(it, rec.wall_s, rec.elbo(), Approximation(
                    runner.family, rule.estimate(state), runner.target))):
                reason = "stopped by checkpoint"
                break
        if converged:
            break
    if reason == "max_iter":
        rec.note(rule.max_iter_note)
    params = rule.estimate(state)
    if checkpoint is not None and last_hook != it:
        checkpoint(CheckpointInfo(it, rec.wall_s, rec.elbo(),
                                  Approximation(runner.family, params, runner.target)))
    return make_result(rec.outcome(rule, params, state, converged, reason), True)


_FLOAT64 = "fit in float64 (dtype=\"float64\": float32 overflows sooner where q's draws reach), "
_SIMPLER_Q = ", or a mean-field q (family=\"meanfield\")"


def _remedy(params: Any, iteration: int, family: str) -> str:
    """The remedy an :class:`ADVIError` of :func:`_restart` names: float64 only where the
    fit ran in float32 (``params``' dtype)."""
    float32 = np.dtype(jax.tree_util.tree_leaves(params)[0].dtype) != np.float64
    if iteration == 0:
        return ("; no eta helps at iteration 0, where the initial q's own draws fail: start "
                "elsewhere (init='zero', another rng_key)" + (" or fit in float64" if float32
                                                              else ""))
    return ("; remedy: " + (_FLOAT64 if float32 else "") + "another start (another rng_key)"
            + (_SIMPLER_Q if family == "fullrank" else ""))


def _narrows(policy: RestartPolicy, rec: _Record, iteration: int) -> bool:
    """Whether a restart from ``iteration`` narrows q (iteration 0, narrowings left)."""
    return iteration == 0 and policy.narrow is not None and (
        sum(r[0] == 0 for r in rec.restarts) < policy.narrowings)


def _restart(runner: Any, rule: StoppingRule, policy: RestartPolicy, rec: _Record,
             state: ADVIState, cause: str, make_result: Callable) -> ADVIState:
    """A fresh optimiser at ``rule.fallback(state)`` with the policy's smaller eta (at
    iteration 0, first with q narrowed and the same eta: :class:`RestartPolicy`)."""
    start = rule.fallback(state)
    it, new_eta = int(start.iteration), policy.next_eta(rec.eta)
    if _narrows(policy, rec, it):
        assert policy.narrow is not None
        rec.restarts.append((it, rec.eta, rec.eta))  # in ADVIResult.restarts; no warning:
        # the fit goes on as from any start, and its own checks judge where it ends
        logger.info("%s at iteration 0 with eta=%g; restarting with q's scales narrowed",
                    cause, rec.eta)
        rule.restarted()
        return fresh_state(policy.narrow(start.params), runner.optimizer, start.iteration,
                           start.redraws)
    if new_eta is None:
        remedy = _remedy(start.params, it, runner.family.name)
        raise ADVIError(
            f"{cause} at iteration {it} with eta={rec.eta:g}, {policy.limit}{remedy}; "
            f"stopping. err.result holds {rule.fallback_text} and its history.",
            make_result(rec.outcome(rule, start.params, start, False, "max_iter"), False))
    rec.restarts.append((it, rec.eta, new_eta))
    rec.note(f"{cause} at iteration {it} with eta={rec.eta:g}; restarting from "
             f"{rule.fallback_text} with eta={new_eta:g}")
    rec.eta = new_eta
    rule.restarted()
    return fresh_state(start.params, runner.optimizer, start.iteration, start.redraws)
