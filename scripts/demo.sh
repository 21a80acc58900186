#!/usr/bin/env bash
# End-to-end demo: builds txl, makes the KJV corpus, trains two small char-level models
# that differ only in model.pos_encoding (relative vs absolute), evaluates both at several
# context lengths and compares them.
#
# Usage: scripts/demo.sh
# Environment:
#   DEMO_STEPS=N   override train.max_steps of both configs (e.g. DEMO_STEPS=50 for a smoke run)
# Outputs: runs/demo-kjv-{relative,absolute}/ (run directories),
#          runs/demo-compare.{json,png,svg}.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

lengths=32,64,128,256,512
encodings=(relative absolute)
txl=build/txl

steps_args=()
if [[ -n "${DEMO_STEPS:-}" ]]; then
  [[ "$DEMO_STEPS" =~ ^[1-9][0-9]*$ ]] ||
    { echo "error: DEMO_STEPS must be a positive integer, got '$DEMO_STEPS'" >&2; exit 2; }
  steps_args=(--set "train.max_steps=$DEMO_STEPS")
fi

for enc in "${encodings[@]}"; do
  cfg="configs/kjv-char-$enc.json"
  [[ -f "$cfg" ]] || { echo "error: $cfg not found (configs/ are written by hand, not by this script)" >&2; exit 1; }
done

t_total=$SECONDS
t_phase=$SECONDS
summary=()
phase_done() {
  summary+=("$(printf '[demo] %-22s %6d s' "$1" $(( SECONDS - t_phase )))")
  echo "${summary[-1]}"
  t_phase=$SECONDS
}

# The demo needs only the executable, not the test binaries.
bash scripts/setup.sh --target txl
phase_done setup

bash data/make_corpora.sh --only kjv
phase_done corpus

mkdir -p runs
for enc in "${encodings[@]}"; do
  "$txl" train --config "configs/kjv-char-$enc.json" --run-dir "runs/demo-kjv-$enc" --force \
    "${steps_args[@]+"${steps_args[@]}"}"
  phase_done "train $enc"
done

# compare evaluates both runs on the same windows (caching each run's results in
# RUN/eval-cache), prints the table with paired intervals and draws the plot.
"$txl" compare "runs/demo-kjv-${encodings[0]}" "runs/demo-kjv-${encodings[1]}" \
  --lengths "$lengths" --json runs/demo-compare.json --plot runs/demo-compare.png
phase_done "eval + compare"
echo "[demo] comparison: runs/demo-compare.json, plot: runs/demo-compare.png (and .svg)"

printf '%s\n' "${summary[@]}"
printf '[demo] %-22s %6d s\n' "total wall time" $(( SECONDS - t_total ))
