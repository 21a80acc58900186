#!/usr/bin/env bash
# The GPU check (README, "GPUs"), in two halves:
#   scripts/gpu_check.sh deps          on a Debian machine: copies the header-only libraries
#                                      (CLI11, nlohmann-json, spdlog, fmt) and GoogleTest's
#                                      sources from Debian's -dev packages into deps/ (ignored
#                                      by git), for a GPU machine that has none of them
#   scripts/gpu_check.sh run OUT_DIR   on the GPU machine (PyTorch 2.x with CUDA, CMake, ninja;
#                                      no network, no -dev packages): builds txl and its tests
#                                      against that PyTorch's LibTorch into build-cuda/ on every
#                                      core, through LibTorch's CMake package or, where that
#                                      fails (its CUDA toolkit search), from LibTorch's folder
#                                      alone (TXL_TORCH_ROOT); runs the device tests, one
#                                      process each (every encoding's losses and gradients
#                                      against the CPU's, a short training run following the
#                                      CPU's losses, its checkpoint on either device, AdamW and
#                                      clipping against the CPU's), a debugger's backtrace of a
#                                      test that crashed there once; then `txl bench` of the
#                                      Transformer-XL base shape (16 layers, d_model 512, 8
#                                      heads, tgt_len = mem_len = 192, batch 32) and of the
#                                      reference config in bf16 and fp32 (TF32 products); the
#                                      first shape in bf16 with and without LibTorch's
#                                      multi-tensor kernels (TXL_MULTI_TENSOR=0), alternated,
#                                      and its per-operator profile; every encoding at the first
#                                      shape in bf16 with scaled_dot_product_attention for every
#                                      encoding and for the content-only ones alone
#                                      (TXL_SDPA_POSITION=0); last the whole CPU suite (ctest)
#                                      if time is left. Logs, bench JSON, a summary and the
#                                      crash reports' backtraces (crashes.txt) go to OUT_DIR;
#                                      exit 0 when every step passed.
# Environment, for trying the whole script out on a machine without a GPU:
#   TXL_TORCH_PREFIX=DIR        LibTorch's CMake prefix instead of asking python3's torch
#   TXL_GPU_CHECK_DEVICE=cpu    bench on the CPU (default cuda); the device tests then skip
#   TXL_GPU_CHECK_STEPS=N       timed steps per bench (default 20); TXL_GPU_CHECK_WARMUP=N (5)
#   TXL_GPU_CHECK_SHAPES="base reference"  which shapes to bench (default both)
#   TXL_GPU_CHECK_ENCODINGS=0   skip the every-encoding benches; TXL_GPU_CHECK_SUITE=0 the suite
#   TXL_GPU_CHECK_ATTENTION="SDPA_POSITION=1 SDPA_POSITION=0"  the attention settings benched
#   TXL_GPU_CHECK_BUILD_DIR=DIR the build folder (default build-cuda)
#   TXL_GPU_CHECK_DEADLINE=S    seconds from the start after which no further step starts
#                               (default 100000); each step is also stopped at the deadline
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

collect_deps() {
  ensure_packages gpu-deps libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev
  rm -rf deps
  mkdir -p deps/include
  local d
  for d in CLI nlohmann spdlog fmt; do cp -r "/usr/include/$d" deps/include/; done
  cp -r /usr/src/googletest deps/googletest
  echo "[gpu] deps/: $(du -sh deps | cut -f1) of headers and GoogleTest sources"
}

# A bench config: the reference shape (4 layers, d_model 256, 4 heads, 128 / 128, batch 16)
# or Transformer-XL base (16 layers, d_model 512, 8 heads, d_inner 2048, 192 / 192, batch 32).
write_bench_config() {
  local path=$1 shape=$2 device=$3
  local layers=4 width=256 heads=4 len=128 batch=16
  if [[ "$shape" == base ]]; then layers=16 width=512 heads=8 len=192 batch=32; fi
  cat >"$path" <<JSON
{"model": {"pos_encoding": "relative", "n_layer": $layers, "d_model": $width, "n_head": $heads,
           "d_head": 64, "d_inner": $((4 * width)), "dropout": 0.1},
 "train": {"tgt_len": $len, "mem_len": $len, "batch_size": $batch, "device": "$device"}}
JSON
}

# Runs one step of the check, its output to OUT_DIR/NAME.log (and the terminal), and records
# its status and time in the summary.
step() {
  local name=$1 start=$SECONDS status=0
  shift
  local left=$(( deadline - SECONDS ))
  if (( left <= 5 )); then
    summary+=("$(printf '%-22s %s' "$name" "not run: the deadline had passed")")
    last_status=124
    failed=1
    return 0
  fi
  echo "[gpu] $name: $*"
  timeout "$left" "$@" 2>&1 | tee "$out/$name.log" || status=$?
  local line
  line="$(printf '%-22s exit %-3d %5d s' "$name" "$status" $(( SECONDS - start )))"
  echo "[gpu] $line"
  summary+=("$line")
  last_status=$status
  if [[ $status -ne 0 ]]; then failed=1; fi
  return 0
}

# The C++ standard LibTorch's headers ask for: 17, or 20 where they refuse anything older.
torch_cxx_standard() {
  local root=$1 text
  text="$(cat "$root/include/c10/macros/Macros.h" "$root/include/c10/util/C++17.h" \
    "$root/include/torch/csrc/api/include/torch/all.h" 2>/dev/null || true)"
  if grep -Eq 'C\+\+20 (or later )?(compatible compiler )?is required|You need C\+\+20' <<<"$text"; then
    echo 20
  else
    echo 17
  fi
}

torch_prefix() {
  if [[ -n "${TXL_TORCH_PREFIX:-}" ]]; then
    echo "$TXL_TORCH_PREFIX"
  else
    python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'
  fi
}

run_check() {
  out=$1
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  summary=()
  failed=0
  SECONDS=0
  build="${TXL_GPU_CHECK_BUILD_DIR:-build-cuda}"
  deadline="${TXL_GPU_CHECK_DEADLINE:-100000}"
  local device="${TXL_GPU_CHECK_DEVICE:-cuda}" steps="${TXL_GPU_CHECK_STEPS:-20}"
  local warmup="${TXL_GPU_CHECK_WARMUP:-5}" shapes="${TXL_GPU_CHECK_SHAPES:-base reference}"
  local prefix
  prefix="$(torch_prefix)"
  if [[ -z "${TXL_TORCH_PREFIX:-}" ]]; then
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
      "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' |
      tee "$out/torch.txt"
  fi
  nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
  local extra=() root standard
  [[ -d deps/include ]] && extra+=("-DTXL_HEADER_DEPS=$repo/deps")
  [[ -d deps/googletest ]] && extra+=("-DTXL_GTEST_SOURCE=$repo/deps/googletest")
  root="$(cd "$prefix/../.." && pwd)"
  standard="$(torch_cxx_standard "$root")"
  echo "[gpu] LibTorch at $root; its headers ask for C++$standard" | tee "$out/standard.txt"
  extra+=("-DCMAKE_CXX_STANDARD=$standard")
  # No CUDA code of txl's own: the architecture list only spares CMake its GPU probe.
  export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
  step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" "${extra[@]+"${extra[@]}"}"
  if (( last_status != 0 )); then
    rm -rf "$build"
    step configure-direct cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTXL_TORCH_ROOT="$root" "${extra[@]+"${extra[@]}"}"
  fi
  # -k 0: every file that fails to compile is in the log, not only the first.
  step build cmake --build "$build" -j "$(nproc)" -- -k 0
  if [[ ! -x "$build"/txl ]]; then
    echo "[gpu] the build failed: $out/build.log" >&2
    finish
    return 1
  fi
  step info "$build"/txl info --no-bench
  if [[ -x "$build"/txl_core_tests ]]; then
    # One process per GoogleTest suite (ctest): a suite that crashes hides none of the others.
    step device-tests ctest --test-dir "$build" -j 4 --timeout 300 --output-on-failure \
      -R 'DeviceNames|ResolveDevice|DeviceConfig|DeviceCli|OnCuda'
    # The first GPU run saw tests crash the test process (SIGSEGV) on that box alone
    # (docs/platforms.md): a backtrace of one, where a debugger is at hand.
    local debugger
    debugger="$(command -v cuda-gdb || command -v gdb || true)"
    if [[ -n "$debugger" ]]; then
      step backtrace "$debugger" -batch -ex run -ex bt --args "$build"/txl_core_tests \
        --gtest_filter=CheckpointFile.RoundTripRestoresEverythingTheNextStepNeeds
    fi
  fi
  local shape precision round
  for shape in $shapes; do
    write_bench_config "$out/$shape.json" "$shape" "$device"
    for precision in bf16 fp32; do
      step "bench-$shape-$precision" "$build"/txl bench --config "$out/$shape.json" \
        --precision "$precision" --steps "$steps" --warmup "$warmup" --long-length 0 \
        --json "$out/bench-$shape-$precision.json"
    done
  done
  shape="${shapes%% *}"
  # LibTorch's multi-tensor kernels (fused AdamW, foreach clipping) against one kernel per
  # parameter (TXL_MULTI_TENSOR=0), alternated, at the first shape in bf16; then where the
  # step's host time goes, by operator.
  for round in 1 2; do
    for mt in 0 1; do
      step "multi-tensor$mt-$round" env TXL_MULTI_TENSOR="$mt" "$build"/txl bench \
        --config "$out/$shape.json" --precision bf16 --steps "$steps" --warmup "$warmup" \
        --long-length 0 --json "$out/multi-tensor$mt-$round.json"
    done
  done
  step "profile-$shape-bf16" "$build"/txl bench --config "$out/$shape.json" --precision bf16 \
    --steps 5 --warmup "$warmup" --long-length 0 --profile
  if [[ "${TXL_GPU_CHECK_ENCODINGS:-1}" != 0 ]]; then
    # Every encoding at the first shape without memory (equal work), interleaved, with
    # LibTorch's scaled_dot_product_attention for every encoding (the default), and for those
    # without a learned position term only (TXL_SDPA_POSITION=0); TXL_GPU_CHECK_ATTENTION
    # lists the settings (SDPA=0: none of it).
    local setting
    for setting in ${TXL_GPU_CHECK_ATTENTION:-SDPA_POSITION=1 SDPA_POSITION=0}; do
      step "encodings-$setting" env "TXL_$setting" "$build"/txl bench \
        --config "$out/$shape.json" --set train.mem_len=0 --precision bf16 --encodings all \
        --rounds 3 --steps "$steps" --warmup "$warmup" --long-length 0 \
        --json "$out/encodings-$setting.json"
    done
  fi
  if [[ "${TXL_GPU_CHECK_SUITE:-1}" != 0 ]]; then
    step suite ctest --test-dir "$build" -j "$(nproc)" --timeout 300 --output-on-failure
  fi
  symbolize_crashes
  finish
  return "$failed"
}

# The backtraces txl's crash report (src/platform/crash_report.cpp) wrote into the logs, into
# OUT_DIR/crashes.txt: C++ names demangled, and the executable's own frames (binary(+0x...))
# named by addr2line where it is at hand.
symbolize_crashes() {
  local log
  : >"$out/crashes.txt"
  for log in "$out"/*.log; do
    grep -q 'txl: crashed with' "$log" 2>/dev/null || continue
    echo "== $log" >>"$out/crashes.txt"
    grep -A 66 'txl: crashed with' "$log" | head -n 2000 | symbolize_frames |
      { c++filt 2>/dev/null || cat; } >>"$out/crashes.txt"
  done
  echo "[gpu] crash reports: $(grep -c '^== ' "$out/crashes.txt") logs (crashes.txt)"
}

symbolize_frames() {
  local frame
  while IFS= read -r frame; do
    if [[ "$frame" =~ ^([^\(\ ]+)\(\+(0x[0-9a-f]+)\) ]] && command -v addr2line >/dev/null; then
      echo "$frame  $(addr2line -Cfpe "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" 2>/dev/null)"
    else
      echo "$frame"
    fi
  done
}

finish() {
  {
    printf '%s\n' "${summary[@]}"
    printf '%-22s %14d s\n' "total wall time" "$SECONDS"
  } | tee "$out/summary.txt"
}

case "${1:-}" in
  deps) collect_deps ;;
  run)
    [[ -n "${2:-}" ]] || { echo "usage: scripts/gpu_check.sh run OUT_DIR" >&2; exit 2; }
    run_check "$2"
    ;;
  *) echo "usage: scripts/gpu_check.sh deps | run OUT_DIR" >&2; exit 2 ;;
esac
