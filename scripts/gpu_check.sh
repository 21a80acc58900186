#!/usr/bin/env bash
# The GPU check, in two halves (README, "GPUs"):
#   scripts/gpu_check.sh deps          on a Debian machine: copies the header-only libraries
#                                      (CLI11, nlohmann-json, spdlog, fmt) and GoogleTest's
#                                      sources from Debian's -dev packages into deps/ (ignored
#                                      by git), for a GPU machine that has none of them
#   scripts/gpu_check.sh run OUT_DIR   on the GPU machine (a PyTorch 2.x with CUDA, CMake,
#                                      ninja, the CUDA toolkit): builds txl against that
#                                      PyTorch's LibTorch into build-cuda/, runs the device
#                                      tests and `txl bench` on the reference config and a
#                                      16-layer d_model 512 config in fp32 and bf16, and writes
#                                      the logs and bench JSON to OUT_DIR
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

# A config file in OUT_DIR: the reference shape, or 16 layers of d_model 512.
write_bench_config() {
  local path=$1 layers=$2 width=$3 heads=$4
  cat >"$path" <<JSON
{"model": {"pos_encoding": "relative", "n_layer": $layers, "d_model": $width, "n_head": $heads,
           "d_head": 64, "d_inner": $((4 * width)), "dropout": 0.1},
 "train": {"tgt_len": 128, "mem_len": 128, "batch_size": 16, "device": "cuda"}}
JSON
}

run_check() {
  local out=$1
  mkdir -p "$out"
  local prefix
  prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' |
    tee "$out/torch.txt"
  local extra=()
  [[ -d deps/include ]] && extra+=("-DTXL_HEADER_DEPS=$repo/deps")
  [[ -d deps/googletest ]] && extra+=("-DTXL_GTEST_SOURCE=$repo/deps/googletest")
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    "${extra[@]}" 2>&1 | tee "$out/configure.log"
  cmake --build build-cuda --target txl txl_core_tests 2>&1 | tail -n 40 | tee "$out/build.log"
  build-cuda/txl info --no-bench | tee "$out/info.txt"
  build-cuda/txl_core_tests \
    --gtest_filter='DeviceNames*:ResolveDevice*:DeviceConfig*:DeviceCli*:*OnCuda*' \
    2>&1 | tee "$out/tests.log"
  write_bench_config "$out/reference.json" 4 256 4
  write_bench_config "$out/large.json" 16 512 8
  local config precision
  for config in reference large; do
    for precision in fp32 bf16; do
      build-cuda/txl bench --config "$out/$config.json" --precision "$precision" --steps 20 \
        --long-length 0 --json "$out/bench-$config-$precision.json" 2>&1 |
        tee "$out/bench-$config-$precision.txt"
    done
  done
}

case "${1:-}" in
  deps) collect_deps ;;
  run)
    [[ -n "${2:-}" ]] || { echo "usage: scripts/gpu_check.sh run OUT_DIR" >&2; exit 2; }
    run_check "$2"
    ;;
  *) echo "usage: scripts/gpu_check.sh deps | run OUT_DIR" >&2; exit 2 ;;
esac
