#!/usr/bin/env bash
# Builds everything (scripts/setup.sh) and runs the test suite with CTest.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -R Config]
# Exits non-zero when the build fails, any test fails, or no test is found.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

bash scripts/setup.sh

# OpenBLAS 0.3.21 (Debian 12) misdetects AVX-512 Zen 4 CPUs as Prescott and then runs its
# slowest generic kernels (~30 GFLOP/s instead of ~155 per core, NOTES.md section 6).
# It reads OPENBLAS_CORETYPE only when the library loads, so it must be in the environment
# before any test binary starts. SkylakeX kernels are correct on every AVX-512F CPU.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  export OPENBLAS_CORETYPE=SkylakeX
  echo "[test] OPENBLAS_CORETYPE=SkylakeX (AVX-512 CPU)"
fi

start=$SECONDS
status=0
ctest --test-dir build --output-on-failure --no-tests=error -j2 "$@" || status=$?
echo "[test] ctest $(( SECONDS - start )) s, exit status $status"
exit "$status"
