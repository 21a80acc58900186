#!/usr/bin/env bash
# Checks that the library's folders include each other in one direction only: a file in
# src/X/ or include/txl/X/ may include txl/Y/ only when Y comes before X in `layers` (or is
# X), and that the encodings' traits files, built into the torch-free txl_base, include
# nothing above config. Prints every include that points the wrong way and exits 1 when
# there is one.
# Usage: scripts/check_layers.sh
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

# Lowest first. util: errors, files, hashes, UTF-8; config: the configuration tree; data:
# tokenizers and corpora; platform: BLAS, CPU, threads; model: the network; run: run
# directories, checkpoints, training state; eval: evaluation protocols and reports; probe:
# the probes of context use (RECL, copy distance, passkey, attention statistics); train:
# the training loop and bench; study: studies (grids of runs, seed statistics, reports); cli:
# the subcommands.
layers=(util config data platform model run eval probe train study cli)

rank() {
  local i
  for i in "${!layers[@]}"; do
    if [[ "${layers[$i]}" == "$1" ]]; then echo "$i"; return 0; fi
  done
  echo -1
}

violations=0
checked=0
while IFS= read -r file; do
  [[ -n "$file" ]] || continue
  folder="${file#src/}"
  folder="${folder#include/txl/}"
  folder="${folder%%/*}"
  from="$(rank "$folder")"
  if [[ "$from" -lt 0 ]]; then
    echo "[layers] $file: folder '$folder' is not in the layer list of ${BASH_SOURCE[0]}" >&2
    violations=$((violations + 1))
    continue
  fi
  checked=$((checked + 1))
  includes="$(sed -n 's@^#include "txl/\([a-z_]*\)/.*@\1@p' "$file")"
  for target in $includes; do
    to="$(rank "$target")"
    if [[ "$to" -lt 0 || "$to" -gt "$from" ]]; then
      echo "[layers] $file ($folder) includes txl/$target/: $folder may include only" \
        "${layers[*]:0:$((from + 1))}" >&2
      violations=$((violations + 1))
    fi
  done
done < <(find src include/txl -mindepth 2 -name '*.cpp' -o -mindepth 2 -name '*.h' | sort)

# An encoding's traits (src/model/encodings/<name>_traits.cpp) lie beside its module but are
# built into txl_base, which has no LibTorch (CMakeLists.txt): they may include util/ and
# config/ only, and no torch header.
traits=0
for file in src/model/encodings/*_traits.cpp; do
  [[ -e "$file" ]] || continue
  traits=$((traits + 1))
  while IFS= read -r target; do
    if [[ "$target" != "util" && "$target" != "config" ]]; then
      echo "[layers] $file includes txl/$target/: a traits file is built into txl_base and" \
        "may include only util and config" >&2
      violations=$((violations + 1))
    fi
  done < <(sed -n 's@^#include "txl/\([a-z_]*\)/.*@\1@p' "$file")
  if grep -q '^#include <\(torch\|ATen\|c10\)/' "$file"; then
    echo "[layers] $file includes a LibTorch header: a traits file is built into txl_base" >&2
    violations=$((violations + 1))
  fi
done

if [[ $violations -gt 0 ]]; then
  echo "[layers] $violations includes point the wrong way" >&2
  exit 1
fi
echo "[layers] $checked files: every include points down (${layers[*]}); $traits traits" \
  "files include only util and config"
