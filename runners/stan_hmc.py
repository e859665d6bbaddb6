"""Static HMC's warmup as Stan runs it, on NumPyro's HMC kernel.

NumPyro's ``hmc(algo="HMC")`` and Stan's static HMC (``stan/mcmc/hmc/static/
base_static_hmc.hpp``, ``adapt_diag_e_static_hmc.hpp``, ``stan/mcmc/hmc/base_hmc.hpp``'s
``init_stepsize`` and ``services/sample/hmc_static_diag_e_adapt.hpp`` in Stan 2.35) share
the leapfrog integrator, the Metropolis acceptance, dual averaging's parameters (gamma 0.05,
t0 10, kappa 0.75) and the metric's adaptation windows (75 / 25 doubling / 50, regularised as
n/(n+5) var + 1e-3 * 5/(n+5)). They differ at the start of warmup, which decides everything
from a far starting point such as Stan's U(-2, 2) (initial potential ~1e6 nats on E1):

- Stan runs its step-size heuristic (``init_stepsize``: from ``stepsize`` = 1, halve or
  double until one leapfrog step's acceptance crosses 0.8) before warmup and after every
  metric update. NumPyro's functional ``hmc`` runs its equivalent,
  ``find_reasonable_step_size``, only with ``find_heuristic_step_size=True`` (default
  False): the first transition then takes step size 1.
- Stan computes the number of leapfrog steps L = int(int_time / stepsize) = 6 before the
  heuristic and not again until the first transition is made: the first transition takes
  6 steps of the heuristic's step size (0.001-0.002 on E1), which are accepted and lower
  the potential from ~1e6 to ~1e5 nats; the next momentum draw discards the kinetic energy
  gained. NumPyro takes ceil(2 pi / step size) steps from the start: with the heuristic,
  6,400 on E1, a full 2 pi trajectory that turns the initial potential into kinetic energy,
  reaches log(tau) or log(alpha) of about -1e3 (overflow) and is rejected at every step
  size, so the chain never leaves its starting point.
- Stan centres dual averaging on mu = log(10 * stepsize) = log(10) until the first metric
  update (then on log(10 * the heuristic's step size), as NumPyro does at every update);
  NumPyro with the heuristic centres it on log(10 * the heuristic's step size) from the
  start.
- Stan's L is max(1, int(int_time / step size)), NumPyro's ceil(int_time / step size)
  (with the step size shrunk to int_time / L).

:func:`static_hmc` gives NumPyro's kernel Stan's behaviour on all four. One quirk is not
copied: after warmup Stan keeps the L of the last warmup transition with the averaged step
size; here L follows the step size, so sampling's trajectories stay 2 pi long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from numpyro.infer.hmc import hmc
from numpyro.infer.hmc_util import dual_averaging

STAN_STEPSIZE = 1.0
"""Stan's ``stepsize`` argument (its default): the nominal step size before warmup, from
which its first L and its first dual-averaging centre come."""

_ROUNDING = 1.0 - 1e-6
"""Shrinks L * step size so that NumPyro's ceil(length / step size) is L despite round-off."""


def num_steps(step_size: Any, iteration: Any, trajectory_length: float) -> Any:
    """Stan's number of leapfrog steps for the transition after ``iteration`` transitions.

    Args:
        step_size: the step size of the transition (scalar array, any float dtype).
        iteration: transitions made so far (NumPyro's ``HMCState.i``, int32 scalar).
        trajectory_length: Stan's ``int_time`` (2 pi by default), in the metric's units.

    Returns:
        L = max(1, floor(trajectory_length / nominal)) as a float scalar of
        ``step_size``'s dtype (float, so that a collapsed step size does not overflow
        int32), where the nominal step size is :data:`STAN_STEPSIZE` for the first
        transition (Stan computes L before its step-size heuristic runs and not again until
        the first transition has been made) and ``step_size`` after it.
    """
    nominal = jnp.where(iteration == 0, jnp.asarray(STAN_STEPSIZE, jnp.result_type(step_size)),
                        step_size)
    return jnp.maximum(1.0, jnp.floor(trajectory_length / nominal))


def stan_static_kernel(sample_kernel: Callable[[Any], Any], trajectory_length: float
                       ) -> Callable[[Any], Any]:
    """NumPyro's HMC ``sample_kernel`` making Stan's :func:`num_steps` leapfrog steps.

    Args:
        sample_kernel: the second function of ``numpyro.infer.hmc.hmc(..., algo="HMC")``.
        trajectory_length: Stan's ``int_time`` (the ``trajectory_length`` NumPyro's state
            was initialised with).

    Returns:
        ``HMCState -> HMCState``: sets the state's ``trajectory_length`` to L * step size
        (times 1 - 1e-6, so that NumPyro's ceil gives L), makes the transition and restores
        ``trajectory_length``. The step size is the adapted one, unstretched.
    """

    def transition(state: Any) -> Any:
        step_size = state.adapt_state.step_size
        steps = num_steps(step_size, state.i, trajectory_length)
        state = sample_kernel(state._replace(trajectory_length=steps * step_size * _ROUNDING))
        return state._replace(trajectory_length=jnp.asarray(trajectory_length,
                                                            jnp.result_type(step_size)))

    return transition


def stan_warmup_start(state: Any) -> Any:
    """NumPyro's initial ``HMCState`` with dual averaging centred as Stan centres it.

    Args:
        state: what ``init_kernel`` of ``numpyro.infer.hmc.hmc`` returned with
            ``find_heuristic_step_size=True`` (the step size found from
            :data:`STAN_STEPSIZE`).

    Returns:
        The state whose dual-averaging state is restarted at mu = log(10 *
        :data:`STAN_STEPSIZE`) (Stan's ``set_mu(log(10 * stepsize))`` before warmup);
        NumPyro's own re-centring at each metric update, on log(10 * the step size found
        then), is Stan's too.
    """
    init, _ = dual_averaging()
    dtype = jnp.result_type(state.adapt_state.step_size)
    ss_state = init(jnp.log(jnp.asarray(10.0 * STAN_STEPSIZE, dtype)))
    return state._replace(adapt_state=state.adapt_state._replace(ss_state=ss_state))


def static_hmc(potential_fn: Callable[[Any], Any], trajectory_length: float
               ) -> tuple[Callable[..., Any], Callable[[Any], Any]]:
    """NumPyro's static HMC kernels (``numpyro.infer.hmc.hmc(potential_fn, algo="HMC")``)
    with Stan's start of warmup (see the module's docstring).

    Args:
        potential_fn: unconstrained parameters (pytree) -> potential energy (nats), as
            ``numpyro.infer.util.initialize_model`` gives it.
        trajectory_length: Stan's ``int_time`` (2 pi by default).

    Returns:
        ``(init_kernel, sample_kernel)`` as NumPyro's: ``init_kernel(init_params,
        num_warmup, **kwargs)`` takes NumPyro's keywords except ``step_size``,
        ``trajectory_length`` and ``find_heuristic_step_size``, which are Stan's
        (:data:`STAN_STEPSIZE`, ``trajectory_length``, True); its state's dual averaging is
        centred as Stan's (:func:`stan_warmup_start`). ``sample_kernel`` makes Stan's
        :func:`num_steps` leapfrog steps (:func:`stan_static_kernel`).
    """
    init_kernel, sample_kernel = hmc(potential_fn=potential_fn, algo="HMC")

    def init(init_params: Any, num_warmup: int, **kwargs: Any) -> Any:
        state = init_kernel(init_params, num_warmup, step_size=STAN_STEPSIZE,
                            trajectory_length=trajectory_length,
                            find_heuristic_step_size=True, **kwargs)
        return stan_warmup_start(state)

    return init, stan_static_kernel(sample_kernel, trajectory_length)
