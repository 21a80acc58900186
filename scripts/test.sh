#!/usr/bin/env bash
# Builds everything (scripts/setup.sh) and runs the test suite with CTest.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -R Config]
# Exits non-zero when the build fails, any test fails, or no test is found.
#
# CPU-dependent settings (OpenBLAS's kernel set) are not decided here: txl and the test
# binaries decide them at start-up from the CPU they run on (src/platform/cpu.cpp), and
# re-execute themselves when a variable must change. `txl info --env` prints what that
# decision is on this machine; exporting it once spares each test process the restart.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

bash scripts/setup.sh

start_env="$(build/txl info --env)"
while IFS='=' read -r name value; do
  [[ -n "$name" ]] || continue
  export "$name=$value"
  echo "[test] $name=$value (txl info --env)"
done <<<"$start_env"

start=$SECONDS
status=0
ctest --test-dir build --output-on-failure --no-tests=error -j2 "$@" || status=$?
# Each ctest test is a GoogleTest suite (cmake/test_suites.cmake), so a test skipped inside a
# suite that ran shows only in its output: name them here (why: Testing/Temporary/LastTest.log).
skipped="$(sed -n 's/^\[  SKIPPED \] \([^ ]*\) ([0-9]* ms)$/\1/p' build/Testing/Temporary/LastTest.log 2>/dev/null | sort -u)"
if [[ -n "$skipped" ]]; then
  echo "[test] $(wc -l <<<"$skipped") tests skipped (a CPU feature, a GPU or root missing; the reason is in build/Testing/Temporary/LastTest.log):"
  while IFS= read -r name; do echo "[test]   $name"; done <<<"$skipped"
fi
echo "[test] ctest $(( SECONDS - start )) s, exit status $status"
exit "$status"
