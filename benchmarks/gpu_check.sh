#!/usr/bin/env bash
# The library on a GPU, in one go: versions and device, the peers benchmark on E1-E4 at
# paper size against given NUTS references (a CPU's NUTS answers: NUTS on a GPU spends its
# budget in warmup on E3), then the library's tests on the GPU. benchmarks/README.md, "On a
# GPU", records what it printed.
#
#     bash benchmarks/gpu_check.sh [OUTDIR]        # OUTDIR (default gpu-check) gets the logs
#     GPU_CHECK_TESTS=0 bash benchmarks/gpu_check.sh   # the benchmark alone
#
# Scoring is outside each method's clock but not free: a method without a stopping rule runs
# to max_iter (NumPyro SVI: 30,000 steps on E3, 120 checkpoints at --every 250).
# Needs the package and its test extra installed (or importable) and a CUDA build of JAX;
# the data are made under results/ as scripts/fit.py makes them, or read from there.
set -u
out=${1:-gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
python3 -c "import jax, numpyro, optax; print('jax', jax.__version__, 'numpyro', numpyro.__version__, 'optax', optax.__version__, jax.devices())"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv

peers() {  # name, checkpoint spacing, NUTS reference, budget (s), log name, then options;
  # $limit: seconds for the whole process (default 150)
  local name=$1 every=$2 reference=$3 budget=$4 log=$5
  shift 5
  timeout "${limit:-150}" python3 benchmarks/bench_peers.py --experiments "$name" --every "$every" \
    --reference "$reference" --budget-s "$budget" "$@" 2>&1 | tee "$out/$log.md" \
    | grep -v "^INFO\|^WARNING"
}
# each method's line says when it came within 1% of the reference, should a run be cut short
peers gamma_poisson_nmf 250 -4.5113 12 e3 --methods advi_robust advi_stan numpyro_svi
peers dirichlet_exponential_nmf 250 -4.90 10 e4 --methods advi_robust numpyro_svi
peers linreg_ard 50 -1.4228 8 e1 --methods advi_robust numpyro_svi
peers election88 50 -0.6378 8 e2 --methods advi_robust numpyro_svi
# what each loop shape costs a step of E3 (a GPU tests a while_loop's condition on the host)
timeout 120 python3 benchmarks/bench_loops.py 2>&1 | tee "$out/loops.md" | grep -v "^INFO\|^WARNING"

[ "${GPU_CHECK_TESTS:-1}" = 1 ] || exit 0
JAX_PLATFORMS=cuda,cpu timeout 200 python3 -m pytest -q -n 6 -p no:cacheprovider \
  tests/test_advi_*.py >"$out/tests.log" 2>&1
echo "tests: exit $?"
tail -25 "$out/tests.log"
