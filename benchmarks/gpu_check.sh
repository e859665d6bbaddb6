#!/usr/bin/env bash
# The library on a GPU, in one go: versions and device; the peers benchmark on E1-E3 at
# paper size against given NUTS references (a CPU's NUTS answers: NUTS on a GPU spends its
# budget in warmup on E3), alone on the machine for its timings; then, side by side, the
# validation suite (robust ADVI and NUTS, seed 0, every target, each fit a cold process) and
# the library's tests on the GPU. benchmarks/README.md, "On a GPU", records what it printed.
#
#     bash benchmarks/gpu_check.sh [OUTDIR]        # OUTDIR (default gpu-check) gets the logs
#     GPU_CHECK_TESTS=0 GPU_CHECK_SUITE=0 bash benchmarks/gpu_check.sh   # the benchmark alone
#     GPU_CHECK_LOOPS=1 bash benchmarks/gpu_check.sh   # bench_loops.py's loop shapes on E3 too
#
# Scoring is outside each method's clock but not free: a method without a stopping rule runs
# to max_iter (NumPyro SVI: 30,000 steps on E3, 120 checkpoints at --every 250). The suite's
# cold seconds are measured beside the tests, so they are an upper bound; its rows go to
# OUTDIR/suite/rows.jsonl (benchmarks/bench_suite.py's format, resumable).
# Needs the package and its test and bench extras installed (or importable) and a CUDA build
# of JAX; the data are made under results/ as scripts/fit.py makes them, or read from there.
# The scripts use the installed advi_repro where there is one (editable or not), and this
# checkout's folders otherwise (benchmarks/bench_common.py).
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
if [ "${GPU_CHECK_PEERS:-1}" = 1 ]; then
  limit=90 peers linreg_ard 50 -1.4228 8 e1 --methods advi_robust numpyro_svi
  limit=90 peers election88 50 -0.6378 8 e2 --methods advi_robust numpyro_svi
  limit=100 peers gamma_poisson_nmf 250 -4.5113 12 e3 --methods advi_robust numpyro_svi
fi
# what each loop shape costs a step of E3 (a GPU tests a while_loop's condition on the host)
if [ "${GPU_CHECK_LOOPS:-0}" = 1 ]; then
  timeout 120 python3 benchmarks/bench_loops.py 2>&1 | tee "$out/loops.md" | grep -v "^INFO\|^WARNING"
fi

pids=()
if [ "${GPU_CHECK_SUITE:-1}" = 1 ]; then
  timeout "${GPU_CHECK_SUITE_S:-260}" python3 benchmarks/bench_suite.py --methods advi_robust nuts \
    --seeds 0 --jobs "${GPU_CHECK_JOBS:-5}" --out "$out/suite" >"$out/suite.md" 2>&1 &
  pids+=($!)
fi
if [ "${GPU_CHECK_TESTS:-1}" = 1 ]; then
  JAX_PLATFORMS=cuda,cpu timeout "${GPU_CHECK_TESTS_S:-260}" python3 -m pytest -q -n 6 \
    -p no:cacheprovider tests/test_advi_*.py >"$out/tests.log" 2>&1 &
  pids+=($!)
fi
for pid in "${pids[@]}"; do wait "$pid"; echo "stage $pid: exit $?"; done
[ -f "$out/suite.md" ] && tail -45 "$out/suite.md"
[ -f "$out/tests.log" ] && tail -25 "$out/tests.log"
exit 0
