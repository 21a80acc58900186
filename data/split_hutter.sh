#!/usr/bin/env bash
# Splits enwik8 or text8 the way the Transformer-XL paper does: the first 90,000,000 bytes
# are train.txt, the next 5,000,000 valid.txt, the next 5,000,000 test.txt, byte for byte
# (nothing is decoded, added or removed; a split may begin or end inside a UTF-8 character,
# which the "byte" tokenizer reads as it is).
#
# Usage: data/split_hutter.sh FILE OUT_DIR
#   FILE     enwik8 or text8 (100,000,000 bytes), or the .zip they are distributed in
#   OUT_DIR  created; must not exist or be an empty folder
# Then train with data.dir = OUT_DIR: configs/paper/enwik8-base.json ("byte" tokenizer),
# configs/paper/text8-large.json ("char": text8 is 27 ASCII symbols, so char and byte agree).
set -euo pipefail

readonly train_bytes=90000000 split_bytes=5000000
readonly total_bytes=$((train_bytes + 2 * split_bytes))

usage() { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

fail() {
  echo "error: $*" >&2
  exit 2
}

[[ $# -eq 2 ]] || { usage >&2; exit 2; }
file="$1" out="$2"
[[ -f "$file" ]] || fail "$file: not a regular file (expected enwik8, text8 or their .zip)"
if [[ -e "$out" ]]; then
  [[ -d "$out" ]] || fail "$out: exists and is not a folder"
  [[ -z "$(ls -A "$out")" ]] || fail "$out: not empty; choose a new folder (nothing was written)"
fi

# The raw bytes of FILE on stdout (the first member of a .zip).
read_source() {
  if [[ "$file" == *.zip ]]; then
    command -v unzip >/dev/null || fail "$file: unzip is not installed (apt-get install unzip)"
    unzip -p "$file"
  else
    cat "$file"
  fi
}

# head stops reading at 100,000,000 bytes, which ends the reader with SIGPIPE: not an error.
first_bytes() { { read_source || true; } | head -c "$total_bytes"; }

size="$(first_bytes | wc -c)"
((size == total_bytes)) || fail "$file: holds $size bytes; the paper's split needs $total_bytes"

# Written beside OUT_DIR first and moved into place at the end: an interrupted run leaves
# no half-written corpus.
tmp="$(mktemp -d "$(dirname "$out")/.split_hutter.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
first_bytes >"$tmp/all"
head -c "$train_bytes" "$tmp/all" >"$tmp/train.txt"
head -c $((train_bytes + split_bytes)) "$tmp/all" | tail -c "$split_bytes" >"$tmp/valid.txt"
tail -c "$split_bytes" "$tmp/all" >"$tmp/test.txt"
rm "$tmp/all"
mkdir -p "$out"
mv "$tmp/train.txt" "$tmp/valid.txt" "$tmp/test.txt" "$out/"
echo "wrote $out/train.txt (90,000,000 bytes), valid.txt and test.txt (5,000,000 each)"
