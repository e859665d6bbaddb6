#!/usr/bin/env bash
# The library on a GPU, in one go: versions and device, the peers benchmark on E1-E4 at
# paper size against given NUTS references (a CPU's NUTS answers: NUTS on a GPU spends its
# budget in warmup on E3), then the library's tests on the GPU. benchmarks/README.md, "On a
# GPU", records what it printed.
#
#     bash benchmarks/gpu_check.sh [OUTDIR]        # OUTDIR (default gpu-check) gets the logs
#     GPU_CHECK_TESTS=0 bash benchmarks/gpu_check.sh   # the benchmark alone
#
# Needs the package and its test extra installed (or importable) and a CUDA build of JAX;
# the data are made under results/ as scripts/fit.py makes them, or read from there.
set -u
out=${1:-gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -c "import jax, numpyro, optax; print('jax', jax.__version__, 'numpyro', numpyro.__version__, 'optax', optax.__version__, jax.devices())"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv

peers() {  # one experiment: name, checkpoint spacing, NUTS reference, methods, budget (s)
  local name=$1 every=$2 reference=$3 budget=$4
  shift 4
  timeout 150 python3 benchmarks/bench_peers.py --experiments "$name" --every "$every" \
    --reference "$reference" --budget-s "$budget" --methods "$@" 2>&1 | tee "$out/$name.md" \
    | grep -v "^INFO\|^WARNING"
}
peers gamma_poisson_nmf 250 -4.5113 12 advi_robust advi_stan numpyro_svi
peers dirichlet_exponential_nmf 250 -4.90 10 advi_robust numpyro_svi
peers linreg_ard 50 -1.4228 8 advi_robust numpyro_svi
peers election88 50 -0.6378 8 advi_robust numpyro_svi

[ "${GPU_CHECK_TESTS:-1}" = 1 ] || exit 0
JAX_PLATFORMS=cuda,cpu timeout 200 python3 -m pytest -q -n 6 -p no:cacheprovider \
  tests/test_advi_*.py >"$out/tests.log" 2>&1
echo "tests: exit $?"
tail -25 "$out/tests.log"
