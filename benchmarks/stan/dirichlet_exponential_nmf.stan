// E4: Dirichlet-Exponential factorisation (paper Appendix I), as
// models/dirichlet_exponential_nmf.py:
//   theta_u ~ Dirichlet(alpha0 1_K) (u = 1..U frames),
//   beta_ik ~ Exponential(lambda0) (rate)   (i = 1..I pixels),
//   y_ui ~ Poisson(theta_u' beta_i) for the training entries only (the held-out entries are
//   left out of the likelihood).
// The training entries come as a list: y[n] at (frame[n], pixel[n]).
data {
  int<lower=1> U;
  int<lower=1> I;
  int<lower=1> K;
  int<lower=0> N;
  array[N] int<lower=1, upper=U> frame;
  array[N] int<lower=1, upper=I> pixel;
  array[N] int<lower=0> y;
  real<lower=0> alpha0;
  real<lower=0> lambda0;
}
transformed data {
  // column-major position of (frame[n], pixel[n]) in a U x I matrix
  array[N] int cell;
  for (n in 1:N) {
    cell[n] = frame[n] + (pixel[n] - 1) * U;
  }
}
parameters {
  array[U] simplex[K] theta;
  matrix<lower=0>[I, K] beta;
}
model {
  matrix[U, K] theta_matrix;
  for (u in 1:U) {
    theta[u] ~ dirichlet(rep_vector(alpha0, K));
    theta_matrix[u] = theta[u]';
  }
  to_vector(beta) ~ exponential(lambda0);
  y ~ poisson(to_vector(theta_matrix * beta')[cell]);
}
