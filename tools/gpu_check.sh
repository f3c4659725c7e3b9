#!/usr/bin/env bash
# tools/gpu_check.sh: the whole NVIDIA GPU check in one call, for a lent GPU
# machine with no registry access (torch and jax-cuda13-pjrt preinstalled).
# It builds, says which plugin it found, checks the terminal stays quiet, runs
# a chosen pytest subset on the XLA CUDA plugin and the side-by-side
# benchmarks, and writes everything to $OUT:
#   summary.md  one row per stage (exit status, seconds) and the key lines
#   bench.json, bench.md  bench/gpu_compare.py's results
#   logs.tar.gz every stage's full log
#
#   bash tools/gpu_check.sh            # on the GPU machine, from the repo root
#   bash tools/gpu_check.sh --dry-run  # here: the same stages on the CPU plugin,
#                                      # small sizes, to prove the script
#
# What must travel with the repo (ignored folders, named in the device tool's
# `carry`): .pjrt/include/pjrt_c_api.h (copied from the xla-cpu-pjrt wheel;
# never committed), and optionally .prebuilt/_C.<abi>.so, an extension built
# elsewhere against the machine's torch: then the tests start at once
# (GPU_CHECK_BUILD=1 builds from source regardless).
# Reruns: GPU_CHECK_STAGES=pytest,bench TESTS="..." BENCH_ONLY=matmul,mfu.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-/tmp/gpu_check_out}
PY=${PYTHON:-python3}
JOBS=${JOBS:-16}
mkdir -p "$OUT/logs"
SUMMARY=$OUT/summary.md
export PYTHONUNBUFFERED=1
if [ $DRY = 1 ]; then
  PLATFORM=cpu
  BENCH_ARGS="--ref cpu --quick"
else
  PLATFORM=cuda
  BENCH_ARGS="--ref cuda"
fi
export TORCH_PJRT_PLATFORM=$PLATFORM

echo "# gpu_check ($([ $DRY = 1 ] && echo dry run, CPU plugin || echo $PLATFORM)) $(date -u +%FT%TZ)" > "$SUMMARY"
echo "" >> "$SUMMARY"
echo "| stage | exit | seconds |" >> "$SUMMARY"
echo "|---|---|---|" >> "$SUMMARY"

# stage NAME SECONDS CMD...: runs CMD with a time limit, its output in
# logs/NAME.log; one summary row. A failed stage does not stop the others.
stage() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name (limit ${limit}s)"
  # bash -c: CMD may be one of the functions below (exported).
  timeout --kill-after=10 "$limit" bash -c '"$@"' _ "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  echo "| $name | $rc | $((SECONDS - t0)) |" >> "$SUMMARY"
  tail -3 "$OUT/logs/$name.log"
  return $rc
}

env_report() {
  nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
  $PY -c "import sys, torch; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  $PY -m pip list 2>/dev/null | grep -i -E "^(torch|jax|jaxlib|jax-cuda|transformers|pytest|numpy) " || true
  nproc
}

HEADER_DIR=${TORCH_PJRT_PJRT_INCLUDE:-$ROOT/.pjrt/include}
export TORCH_PJRT_PJRT_INCLUDE=$HEADER_DIR

# The extension, built in place into python/torch_pjrt/ with JOBS jobs.
build() {
  test -f "$HEADER_DIR/pjrt_c_api.h" || { echo "no $HEADER_DIR/pjrt_c_api.h"; return 1; }
  # WERROR= : the machine's compiler (gcc 13 there) warns where ours does not.
  make -C "$1" -j"$JOBS" lib PJRT_INCLUDE="$HEADER_DIR" WERROR= &&
    (cd "$1" && MAX_JOBS=$JOBS TORCH_DEVICE_BACKEND_AUTOLOAD=0 $PY setup.py -q build_ext --inplace)
}

# What `pip install -e .` records, written by hand (pip would rebuild): the
# package path and the entry points through which `import torch` autoloads
# torch_pjrt and torch.compile finds backend="tpu".
install_metadata() {
  local site
  site=$($PY -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  local dist=$site/torch_pjrt-0.1.0.dist-info
  mkdir -p "$dist"
  printf 'Metadata-Version: 2.1\nName: torch-pjrt\nVersion: 0.1.0\n' > "$dist/METADATA"
  printf '[torch.backends]\ntpu = torch_pjrt._autoload:_autoload\n\n[torch_dynamo_backends]\ntpu = torch_pjrt._compile:tpu_backend\n' > "$dist/entry_points.txt"
  echo "$ROOT/python" > "$site/torch_pjrt_dev.pth"
}

# A quiet terminal: a small op and a compiled function print nothing to stderr.
quiet() {
  $PY - <<'EOF' 2> "$OUT/logs/quiet.stderr"
import torch
x = torch.arange(6.0, device="tpu").reshape(2, 3)
f = torch.compile(lambda a: (a.sin() + 1).sum(), backend="tpu")
print(float((x * 2).sum()), float(f(x)))
EOF
  local rc=$?
  echo "stderr bytes: $(wc -c < "$OUT/logs/quiet.stderr")"
  cat "$OUT/logs/quiet.stderr"
  [ $rc = 0 ] && [ ! -s "$OUT/logs/quiet.stderr" ]
}
export OUT PY JOBS ROOT HEADER_DIR
export -f env_report build install_metadata quiet
stage env 60 env_report

if [ $DRY = 1 ]; then
  # Here the extension is already built by `make setup` into the venv.
  echo "| build | skipped (dry run: make setup built it) | 0 |" >> "$SUMMARY"
else
  PREBUILT=$(ls "$ROOT"/.prebuilt/_C.*.so 2>/dev/null | head -1)
  if [ -n "$PREBUILT" ] && [ "${GPU_CHECK_BUILD:-0}" != 1 ]; then
    cp "$PREBUILT" "$ROOT/python/torch_pjrt/"
    install_metadata
    if $PY -c "import torch, torch_pjrt" > "$OUT/logs/prebuilt.log" 2>&1; then
      echo "| prebuilt extension | loads | 0 |" >> "$SUMMARY"
    else
      echo "| prebuilt extension | does not load: building | 0 |" >> "$SUMMARY"
      rm -f "$ROOT"/python/torch_pjrt/_C.*.so
      stage build_${JOBS}_jobs 420 build "$ROOT"
    fi
  else
    rm -f "$ROOT"/python/torch_pjrt/_C.*.so
    stage build_${JOBS}_jobs 420 build "$ROOT"
    install_metadata
  fi
fi

# GPU_CHECK_STAGES picks stages for a rerun (default: all of them).
STAGES=",${GPU_CHECK_STAGES:-info,quiet,pytest,bench},"
want() { case $STAGES in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

want info && stage info 120 $PY -m torch_pjrt info
want info && grep -E "^(platform|devices|  tpu:|memory)" "$OUT/logs/info.log" | sed 's/^/    /' >> "$SUMMARY"

want quiet && stage quiet 120 quiet

# BENCH_ONLY: a comma list of bench/gpu_compare.py sections for a rerun.
if want bench; then
  stage bench "${BENCH_LIMIT:-270}" $PY bench/gpu_compare.py $BENCH_ARGS \
    ${BENCH_ONLY:+--only $BENCH_ONLY} --json "$OUT/bench.json" --md "$OUT/bench.md"
fi

# The subset: transfers, basic ops, the LM and CNN models, compile, memory,
# and Hugging Face generation (compiled decode). Tests that need a second
# device skip themselves on a one-GPU machine. TESTS overrides it.
TESTS=${TESTS:-"tests/python/test_transfers.py tests/python/test_ops_basic.py
  tests/python/test_models.py tests/python/test_compile.py tests/python/test_memory.py
  tests/python/test_hf_generate_compiled.py"}
if want pytest; then
  # One hung test must not eat the stage: pytest-timeout where installed.
  PT_TIMEOUT=$($PY -c "import pytest_timeout" 2>/dev/null && echo "--timeout=90")
  stage pytest "${PYTEST_LIMIT:-200}" $PY -m pytest -q -rfEs -p no:cacheprovider -o addopts="" $PT_TIMEOUT \
    --junitxml="$OUT/logs/pytest.xml" $TESTS
  tail -1 "$OUT/logs/pytest.log" | sed 's/^/    pytest: /' >> "$SUMMARY"
  grep -E "^(FAILED|ERROR)" "$OUT/logs/pytest.log" | head -40 | sed 's/^/    /' >> "$SUMMARY"
fi

tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs
rm -rf "$OUT/logs"
cat "$SUMMARY"
