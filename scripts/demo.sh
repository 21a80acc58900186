#!/usr/bin/env bash
# End-to-end demo: builds txl, makes the KJV corpus and runs a small study: char-level models
# that differ only in model.pos_encoding (relative vs absolute), three seeds each, evaluated
# at lengths 32 to 512 (trained at 64) with seed-level intervals, the copy-distance probe
# (does the model use context d tokens back?) and a report, whose main tables it prints.
#
# Usage: scripts/demo.sh
# Environment:
#   DEMO_STEPS=N   train every cell for N steps instead of 600 (e.g. DEMO_STEPS=50 for a smoke run)
# Outputs: runs/study-kjv-demo/ (report.md, results.json, plots/, runs/<cell>/ run directories).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

txl=build/txl
study=configs/studies/kjv-demo.json
out=runs/study-kjv-demo
[[ -f "$study" ]] || { echo "error: $study not found (configs/ are written by hand, not by this script)" >&2; exit 1; }

if [[ -n "${DEMO_STEPS:-}" ]]; then
  [[ "$DEMO_STEPS" =~ ^[1-9][0-9]*$ ]] ||
    { echo "error: DEMO_STEPS must be a positive integer, got '$DEMO_STEPS'" >&2; exit 2; }
  # A one-value grid key changes every cell (and their names) without editing the config.
  mkdir -p runs
  sed "s/\"train.seed\"/\"train.max_steps\": [$DEMO_STEPS], \"train.seed\"/" "$study" \
    >"runs/study-kjv-demo-$DEMO_STEPS.json"
  study="runs/study-kjv-demo-$DEMO_STEPS.json"
  out="runs/study-kjv-demo-$DEMO_STEPS"
fi

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

# Two cells at a time, one thread each (on 2 cores this beats one cell on two threads for a
# model this small). Running the demo again reuses every finished cell.
"$txl" study --config "$study" --out "$out" --jobs 2
phase_done "study (6 cells)"

# The report's main tables on the terminal: perplexity per protocol and the probes' tables
# (images and prose left to report.md).
echo
awk '/^## (Perplexity|Does the model use the context)/ { show = 1 }
     /^## / && !/^## (Perplexity|Does the model use the context)/ { show = 0 }
     show && !/^!\[/ && !/^\(.*not drawn/' "$out/report.md"
echo "[demo] report: $out/report.md, numbers: $out/results.json, plots: $out/plots/"

printf '%s\n' "${summary[@]}"
printf '[demo] %-22s %6d s\n' "total wall time" $(( SECONDS - t_total ))
