// E3: constrained Gamma-Poisson factorisation (paper Appendix H), as models/gamma_poisson_nmf.py:
//   theta_u ~ K iid Gamma(a0, b0), positive_ordered (u = 1..U frames),
//   beta_ik ~ Gamma(c0, d0) (shape, rate)      (i = 1..I pixels),
//   y_ui ~ Poisson(theta_u' beta_i) for the training entries only (the held-out entries are
//   left out of the likelihood).
// The training entries come as a list: y[n] at (frame[n], pixel[n]). The NumPyro model's
// OrderedGamma adds the constant log K! per frame; the posterior is the same.
data {
  int<lower=1> U;
  int<lower=1> I;
  int<lower=1> K;
  int<lower=0> N;
  array[N] int<lower=1, upper=U> frame;
  array[N] int<lower=1, upper=I> pixel;
  array[N] int<lower=0> y;
  real<lower=0> a0;
  real<lower=0> b0;
  real<lower=0> c0;
  real<lower=0> d0;
}
transformed data {
  // column-major position of (frame[n], pixel[n]) in a U x I matrix
  array[N] int cell;
  for (n in 1:N) {
    cell[n] = frame[n] + (pixel[n] - 1) * U;
  }
}
parameters {
  array[U] positive_ordered[K] theta;
  matrix<lower=0>[I, K] beta;
}
model {
  matrix[U, K] theta_matrix;
  for (u in 1:U) {
    theta[u] ~ gamma(a0, b0);
    theta_matrix[u] = theta[u]';
  }
  to_vector(beta) ~ gamma(c0, d0);
  y ~ poisson(to_vector(theta_matrix * beta')[cell]);
}
