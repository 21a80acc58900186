#!/usr/bin/env bash
# Installs what txl needs from Debian packages, points libblas.so.3 at OpenBLAS, then
# configures (once) and builds build/ with CMake + Ninja.
#
# Usage: scripts/setup.sh [--no-build] [--target T]...
#   --no-build   install packages and check BLAS only
#   --target T   build only target T (txl, txl_base_tests, txl_core_tests); repeatable
#
# Idempotent: a second run finds every package installed, build/ configured, and leaves
# Ninja to decide what is stale (nothing, after an unchanged tree).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

usage() { sed -n '5,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

build=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0; shift ;;
    --target)
      [[ $# -ge 2 ]] || { echo "error: --target needs a value (e.g. txl)" >&2; exit 2; }
      targets+=("$2"); shift 2 ;;
    --target=*) targets+=("${1#--target=}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

cd "$repo"
build_dir=build

packages=(build-essential cmake ninja-build ccache git pkg-config libtorch-dev
  libopenblas0-openmp libcli11-dev libspdlog-dev nlohmann-json3-dev libgtest-dev gnuplot-nox
  libsentencepiece-dev libgloo-dev libdnnl-dev)

# Sub-second timer for the phase report (bash 5).
now() { echo "${EPOCHREALTIME/,/.}"; }
t_total=$(now)
t_phase=$t_total
phase_done() {
  local t; t=$(now)
  awk -v a="$t_phase" -v b="$t" -v n="$1" 'BEGIN { printf "[setup] %-10s %7.1f s\n", n, b - a }'
  t_phase=$t
}

# --- Phase 1: packages -------------------------------------------------------------------
ensure_packages setup "${packages[@]}"
phase_done packages

# --- Phase 2: BLAS -----------------------------------------------------------------------
# libtorch calls whatever libblas.so.3 / liblapack.so.3 the alternatives system selects.
# The reference BLAS is ~40x slower than OpenBLAS for fp32 GEMM (~4 against ~155 GFLOP/s a
# core on an AVX-512 Xeon; docs/machines.md), so make sure OpenBLAS is selected; it
# normally wins on priority (95 vs 10) in auto mode, but an earlier manual choice would
# stick.
ensure_openblas() {
  local lib="$1" selections name query current candidate list
  # Whole outputs first, then searched: see the note on pipelines in lib.sh.
  selections="$(update-alternatives --get-selections)"
  name="$(awk -v l="$lib-" 'index($1, l) == 1 { print $1; exit }' <<<"$selections")"
  if [[ -z "$name" ]]; then
    echo "error: no $lib alternative is registered." >&2
    echo "HINT: reinstall OpenBLAS: apt-get install --reinstall libopenblas0-openmp" >&2
    exit 1
  fi
  query="$(update-alternatives --query "$name")"
  current="$(awk '/^Value:/ { print $2 }' <<<"$query")"
  if [[ "$current" != *openblas* ]]; then
    # Prefer the OpenMP build: libtorch itself uses OpenMP, and the pthreads build would
    # compete with it for the cores.
    list="$(update-alternatives --list "$name")"
    candidate="$(grep -m1 'openblas-openmp' <<<"$list" || grep -m1 'openblas' <<<"$list" || true)"
    if [[ -z "$candidate" ]]; then
      echo "error: $name points at $current and no OpenBLAS alternative exists." >&2
      echo "HINT: apt-get install libopenblas0-openmp" >&2
      exit 1
    fi
    echo "[setup] $name pointed at $current; switching to $candidate"
    as_root update-alternatives --set "$name" "$candidate"
    current="$candidate"
  fi
  echo "[setup] active $lib: $current"
}
ensure_openblas libblas.so.3
ensure_openblas liblapack.so.3
phase_done blas

if [[ $build -eq 0 ]]; then
  awk -v a="$t_total" -v b="$(now)" 'BEGIN { printf "[setup] total      %7.1f s (build skipped)\n", b - a }'
  exit 0
fi

# --- Phase 3: configure (once) -----------------------------------------------------------
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" && -f "$build_dir/build.ninja" ]]; then
  home="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")"
  generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache")"
  if [[ "$home" != "$repo" ]]; then
    echo "error: $build_dir/ was configured for another source tree ($home)." >&2
    echo "HINT: rm -rf $repo/$build_dir and rerun." >&2
    exit 1
  fi
  if [[ "$generator" != "Ninja" ]]; then
    echo "error: $build_dir/ uses the '$generator' generator, this script expects Ninja." >&2
    echo "HINT: rm -rf $repo/$build_dir and rerun." >&2
    exit 1
  fi
  echo "[setup] $build_dir/ already configured"
else
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
phase_done configure

# --- Phase 4: build ----------------------------------------------------------------------
# One job per core, but a torch translation unit needs ~1 GB (docs/machines.md), so cap
# the job count at the available memory in GB (or the cgroup limit, if lower).
cores="$(nproc)"
mem_kb="$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)"
if [[ -r /sys/fs/cgroup/memory.max ]]; then
  limit="$(cat /sys/fs/cgroup/memory.max)"
  if [[ "$limit" =~ ^[0-9]+$ ]] && (( limit / 1024 < mem_kb )); then mem_kb=$(( limit / 1024 )); fi
fi
jobs=$(( mem_kb / (1024 * 1024) ))
if (( jobs > cores )); then jobs=$cores; fi
if (( jobs < 1 )); then jobs=1; fi
echo "[setup] building with -j$jobs ($cores cores, $(( mem_kb / 1024 )) MB available)"

# ccache declines every compile that uses a precompiled header unless these sloppiness
# options are set (ccache manual, "Precompiled headers"); all torch files use one.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"

target_args=()
for t in "${targets[@]+"${targets[@]}"}"; do target_args+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${target_args[@]+"${target_args[@]}"}"
phase_done build

awk -v a="$t_total" -v b="$(now)" 'BEGIN { printf "[setup] total      %7.1f s\n", b - a }'
