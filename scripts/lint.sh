#!/usr/bin/env bash
# Static checks of the tree: bash -n and shellcheck over every shell script, the include
# layers (scripts/check_layers.sh), function and file lengths (scripts/check_lengths.sh),
# include loops between files and folders beyond those in scripts/include_loops.known
# (scripts/include_loops.py), clang-format (the checked-in .clang-format) over every C++
# file. Installs shellcheck, clang-format and python3 (for check_lengths and include_loops)
# from Debian when missing. Exits non-zero, naming the files, when a check fails.
# Usage: scripts/lint.sh [--fix]   (--fix rewrites unformatted C++ files in place)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "error: unknown argument '$1' (expected --fix or nothing)" >&2; exit 2 ;;
esac

ensure_packages lint shellcheck clang-format python3

shell_files=(scripts/*.sh data/*.sh .ci/run)
# The tracked C++ files; every C++ file under the source folders where there is no git.
if listing="$(git ls-files '*.cpp' '*.h' 2>/dev/null)"; then :; else
  listing="$(find apps include src tests -name '*.cpp' -o -name '*.h' | sort)"
fi
cpp_files=()
while IFS= read -r f; do if [[ -n "$f" ]]; then cpp_files+=("$f"); fi; done <<<"$listing"

failed=0
for f in "${shell_files[@]}"; do
  bash -n "$f" || { echo "[lint] bash -n failed: $f" >&2; failed=1; }
done
if ! shellcheck -x "${shell_files[@]}"; then
  echo "[lint] shellcheck found problems (above)" >&2
  failed=1
fi
echo "[lint] ${#shell_files[@]} shell scripts checked"

bash scripts/check_layers.sh || failed=1
bash scripts/check_lengths.sh || failed=1
python3 scripts/include_loops.py || failed=1

if [[ $fix -eq 1 ]]; then
  clang-format -i "${cpp_files[@]}"
  echo "[lint] formatted ${#cpp_files[@]} C++ files"
else
  unformatted=()
  for f in "${cpp_files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
  done
  if [[ ${#unformatted[@]} -gt 0 ]]; then
    echo "[lint] ${#unformatted[@]} of ${#cpp_files[@]} C++ files differ from .clang-format:" >&2
    printf '  %s\n' "${unformatted[@]}" >&2
    echo "HINT: scripts/lint.sh --fix" >&2
    failed=1
  else
    echo "[lint] ${#cpp_files[@]} C++ files match .clang-format"
  fi
fi
exit "$failed"
