// E5 (and E6): diagonal Gaussian mixture with the assignments summed out (paper Appendix J),
// as models/gmm.py:
//   theta ~ Dirichlet(alpha0 1_K), mu_kd ~ Normal(0, sigma_mu),
//   sigma_kd ~ LogNormal(0, sigma_sigma),
//   p(x_n) = sum_k theta_k prod_d Normal(x_nd | mu_kd, sigma_kd),  n = 1..N training rows.
// The N x K Gaussian log densities are computed as the NumPyro model computes them, with the
// square expanded into two matrix products (the same function, term by term).
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> K;
  matrix[N, D] x;
  real<lower=0> alpha0;
  real<lower=0> sigma_mu;
  real<lower=0> sigma_sigma;
}
transformed data {
  matrix[N, D] x_squared = square(x);
}
parameters {
  simplex[K] theta;
  matrix[K, D] mu;
  matrix<lower=0>[K, D] sigma;
}
model {
  theta ~ dirichlet(rep_vector(alpha0, K));
  to_vector(mu) ~ normal(0, sigma_mu);
  to_vector(sigma) ~ lognormal(0, sigma_sigma);
  {
    matrix[K, D] precision = inv_square(sigma);
    matrix[K, D] scaled_mu = mu .* precision;
    // sum_d (x_nd - mu_kd)^2 / sigma_kd^2, expanded: N x K
    matrix[N, K] squared = x_squared * precision' - 2 * (x * scaled_mu')
                           + rep_matrix(rows_dot_product(mu, scaled_mu)', N);
    row_vector[K] log_weight = log(theta)' - 0.5 * D * log(2 * pi())
                               - (log(sigma) * rep_vector(1, D))';
    matrix[N, K] log_joint = rep_matrix(log_weight, N) - 0.5 * squared;
    for (n in 1:N) {
      target += log_sum_exp(log_joint[n]);
    }
  }
}
