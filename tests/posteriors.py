"""Posteriors several test files fit, with what is known of them."""

import numpy as np
import numpyro
import numpyro.distributions as dist


def earnings(seed: int = 0, n: int = 500):
    """A regression as posteriordb's earn_height: earnings near 2e4 on an uncentred
    predictor (heights near 66), flat priors on (intercept, slope) and the noise sd."""
    rng = np.random.default_rng(seed)
    height = rng.normal(66.0, 4.0, n)
    earn = -60_000.0 + 1_200.0 * height + rng.normal(0.0, 19_000.0, n)

    def model(height, earn):
        beta = numpyro.sample("beta", dist.ImproperUniform(dist.constraints.real_vector, (),
                                                           (2,)))
        sigma = numpyro.sample("sigma", dist.ImproperUniform(dist.constraints.positive, (),
                                                             ()))
        numpyro.sample("earn", dist.Normal(beta[0] + beta[1] * height, sigma), obs=earn)

    return model, height.astype(np.float32), earn.astype(np.float32)
