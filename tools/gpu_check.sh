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
# elsewhere against the machine's torch: then the tests start at once and the
# 16-job build still runs, beside the tests, to measure it.
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
  timeout --kill-after=10 "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
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
  make -C "$1" -j"$JOBS" lib PJRT_INCLUDE="$HEADER_DIR" &&
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

stage env 60 env_report

if [ $DRY = 1 ]; then
  # Here the extension is already built by `make setup` into the venv.
  echo "| build | skipped (dry run: make setup built it) | 0 |" >> "$SUMMARY"
else
  PREBUILT=$(ls "$ROOT"/.prebuilt/_C.*.so 2>/dev/null | head -1)
  if [ -n "$PREBUILT" ]; then
    cp "$PREBUILT" "$ROOT/python/torch_pjrt/"
    install_metadata
    if $PY -c "import torch, torch_pjrt" > "$OUT/logs/prebuilt.log" 2>&1; then
      echo "| prebuilt extension | loads | 0 |" >> "$SUMMARY"
      # Measure the real build in a copy, beside the tests.
      rm -rf /tmp/buildcheck && mkdir -p /tmp/buildcheck &&
        git ls-files -z | xargs -0 cp --parents -t /tmp/buildcheck
      (stage build_${JOBS}_jobs 420 build /tmp/buildcheck > /dev/null) &
      BUILD_PID=$!
    else
      echo "| prebuilt extension | does not load: building | 0 |" >> "$SUMMARY"
      rm -f "$ROOT"/python/torch_pjrt/_C.*.so
      stage build_${JOBS}_jobs 420 build "$ROOT"
    fi
  else
    stage build_${JOBS}_jobs 420 build "$ROOT"
    install_metadata
  fi
fi

stage info 120 $PY -m torch_pjrt info
grep -E "^(platform|devices|  tpu:|memory)" "$OUT/logs/info.log" | sed 's/^/    /' >> "$SUMMARY"

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
stage quiet 120 quiet

# The subset: transfers, basic ops, the LM and CNN models, compile, memory,
# and Hugging Face generation (compiled decode). Tests that need a second
# device skip themselves on a one-GPU machine.
TESTS="tests/python/test_transfers.py tests/python/test_ops_basic.py tests/python/test_models.py
  tests/python/test_compile.py tests/python/test_memory.py tests/python/test_hf_generate_compiled.py"
PYTEST_LIMIT=${PYTEST_LIMIT:-240}
stage pytest "$PYTEST_LIMIT" $PY -m pytest -q -rfEs -p no:cacheprovider -o addopts="" \
  --junitxml="$OUT/logs/pytest.xml" $TESTS
tail -1 "$OUT/logs/pytest.log" | sed 's/^/    pytest: /' >> "$SUMMARY"
grep -E "^(FAILED|ERROR)" "$OUT/logs/pytest.log" | head -40 | sed 's/^/    /' >> "$SUMMARY"

[ -n "${BUILD_PID:-}" ] && wait "$BUILD_PID"

BENCH_LIMIT=${BENCH_LIMIT:-300}
stage bench "$BENCH_LIMIT" $PY bench/gpu_compare.py $BENCH_ARGS --json "$OUT/bench.json" --md "$OUT/bench.md"

tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs
rm -rf "$OUT/logs"
cat "$SUMMARY"
