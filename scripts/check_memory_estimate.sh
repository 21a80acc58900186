#!/usr/bin/env bash
# Compares txl's training memory estimate with the peak resident memory a real run reaches:
# for one config, `txl train --dry-run` prints the estimate, then `txl train` runs a few
# steps in a scratch run directory under /usr/bin/time -v, and one line gives both and
# their ratio. The run directory is removed afterwards; the token cache is used as usual.
# Usage: scripts/check_memory_estimate.sh CONFIG DATA_DIR [STEPS] [--set key=value ...]
#   CONFIG    a txl config (train.eval_interval 0: the steps, then one validation of 2,000
#             tokens, the same shapes as a whole one, and the checkpoint)
#   DATA_DIR  the corpus folder (data.dir)
#   STEPS     training steps to run (default 3: AdamW's state exists from the second)
# Needs a built build/txl and /usr/bin/time (Debian package time).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
txl="$repo/build/txl"

usage() { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
config="$1" data="$2"
shift 2
steps=3
if [[ $# -gt 0 && "$1" != --set ]]; then steps="$1"; shift; fi
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || { echo "error: STEPS must be a positive integer, got $steps" >&2; exit 2; }
[[ -x "$txl" ]] || { echo "error: $txl is not built (scripts/setup.sh)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "error: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

sets=(--set "data.dir=$data" --set train.eval_interval=0 --set "train.max_steps=$steps"
  --set train.eval_max_tokens=2000 "$@")
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

estimate="$("$txl" train --config "$config" --dry-run "${sets[@]}" |
  sed -n 's/^memory estimate (training, one process): \([0-9.]*\) GB.*/\1/p')"
[[ -n "$estimate" ]] || { echo "error: txl train --dry-run printed no estimate" >&2; exit 1; }
/usr/bin/time -v -o "$scratch/time.txt" "$txl" train --config "$config" --run-dir "$scratch/run" \
  "${sets[@]}" >"$scratch/train.log" 2>&1 || {
  echo "error: txl train failed; its last lines:" >&2
  tail -5 "$scratch/train.log" >&2
  exit 1
}
rss_kb="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$scratch/time.txt")"
awk -v c="$(basename "$config")" -v e="$estimate" -v k="$rss_kb" -v s="$*" 'BEGIN {
  r = k * 1024 / 1e9
  printf "%s %s: estimate %.2f GB, peak RSS %.2f GB, estimate / measured %.2f\n", c, s, e, r, e / r
}'
