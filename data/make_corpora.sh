#!/usr/bin/env bash
# Builds the two package-derived corpora used by txl:
#   data/kjv/{train,valid,test}.txt  King James Bible, from Debian bible-kjv (one verse a line)
#   data/zh/{train,valid,test}.txt   Chinese fortunes, from Debian fortunes-zh (entries
#                                    separated by a blank line)
# Split rule (shared with the reference build): units are numbered from 0 in text order;
# unit i goes to valid when i % 20 == 18, to test when i % 20 == 19, else to train (~90/5/5).
# A unit is a chapter for KJV and a fortune entry for zh.
#
# Usage: data/make_corpora.sh [--only kjv|zh] [--force]
#   --only NAME  build one corpus only
#   --force      rebuild even when the three files already exist
#
# Needs bash, awk, sed, sha256sum and apt-get (the packages are installed when missing).
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/lib.sh"

usage() {
  cat <<'EOF'
Usage: data/make_corpora.sh [--only kjv|zh] [--force]
  --only NAME  build one corpus only (kjv or zh)
  --force      rebuild even when the three files already exist
EOF
}

# Byte-wise text processing: the tools must not depend on the user's locale.
export LC_ALL=C

data_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
only=""
force=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only)
      [[ $# -ge 2 ]] || { echo "error: --only needs a value (kjv or zh)" >&2; exit 2; }
      only="$2"
      shift 2
      ;;
    --only=*) only="${1#--only=}"; shift ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$only" in
  ""|kjv|zh) ;;
  *) echo "error: --only must be kjv or zh, got '$only'" >&2; exit 2 ;;
esac

# sha256 of the reference build (bible-kjv 4.38, fortunes-zh 2.98); another package
# version may legitimately differ, so a mismatch is reported, not fatal.
declare -A expected=(
  [kjv/train.txt]=e60e71462e6097fe53f104496ca9bb4a4e6adaf2b130a47a1c891fce5997239e
  [kjv/valid.txt]=e47c477e2e242655b50f1237b348821bbaa69f060738855988c0c1d8ba41ca4d
  [kjv/test.txt]=8f9172d28e82f33a4b141d2fcb305e44149258046c75182528b5d8be82b8dd24
  [zh/train.txt]=69531346da8ad0f248d1220e1a32b2144e7c9e9c5bf5f4aecdf680475d9cb8de
  [zh/valid.txt]=e7e36a2406c04c59189c7a0d25690c4d447ab1431f7d313c124816b5cd4e3815
  [zh/test.txt]=ca02b285149a00eec5d2d76ceaf4d8e07688e8685a55a51fbaa848fb367f45b6
)

tmp_dirs=()
cleanup() {
  local d
  for d in "${tmp_dirs[@]+"${tmp_dirs[@]}"}"; do rm -rf -- "$d"; done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints one line per split and compares with the reference sums.
report() {
  local name="$1" s f sum
  for s in train valid test; do
    f="$data_dir/$name/$s.txt"
    local verdict
    sum="$(sha256sum "$f")"
    sum="${sum%% *}"
    if [[ "$sum" == "${expected[$name/$s.txt]}" ]]; then
      verdict="matches reference"
    else
      verdict="DIFFERS from reference ${expected[$name/$s.txt]:0:8}... (other package version?)"
    fi
    printf '  %-16s %8d lines %10d bytes  sha256 %s...  %s\n' \
      "$name/$s.txt" "$(wc -l < "$f")" "$(wc -c < "$f")" "${sum:0:8}" "$verdict"
  done
}

# Moves the three finished files from the temp dir into place; train last, so an
# interrupted run never leaves a complete-looking corpus that mixes runs.
install_splits() {
  local name="$1" tmp="$2" s
  for s in valid test train; do
    [[ -s "$tmp/$s.txt" ]] || { echo "error: $name/$s.txt came out empty" >&2; exit 1; }
  done
  mkdir -p "$data_dir/$name"
  rm -f "$data_dir/$name/train.txt"
  for s in valid test train; do
    mv -f "$tmp/$s.txt" "$data_dir/$name/$s.txt"
  done
}

have_corpus() {
  local name="$1"
  [[ -f "$data_dir/$name/train.txt" && -f "$data_dir/$name/valid.txt" &&
     -f "$data_dir/$name/test.txt" ]]
}

# Sets tmp to a fresh folder next to the corpus (same file system, so mv is a rename).
# Not called through $(...): the folder must be recorded in this shell for cleanup.
new_tmp_dir() {
  tmp="$(mktemp -d "$data_dir/.$1.tmp.XXXXXX")"
  tmp_dirs+=("$tmp")
}

# KJV: `bible -f` prints one verse a line as "Ge1:1 text"; the prefix before ':' names
# book and chapter (the unit) and is removed from the text.
make_kjv() {
  ensure_packages corpus bible-kjv
  local tmp
  new_tmp_dir kjv
  bible -f Gen1:1-Rev22:21 | awk -v dir="$tmp" '
    {
      unit = $1
      sub(/:.*/, "", unit)
      if (unit != prev) { n++; prev = unit }
      i = n - 1
      f = (i % 20 == 18) ? "valid" : (i % 20 == 19) ? "test" : "train"
      line = $0
      sub(/^[^ ]* /, "", line)
      print line > (dir "/" f ".txt")
    }
    END {
      if (n != 1189) printf "warning: expected 1189 chapters, got %d\n", n > "/dev/stderr"
    }'
  install_splits kjv "$tmp"
}

# zh: the three fortune files, colour escapes removed, entries split on lines holding
# only "%"; each entry loses its leading and trailing newlines, empty entries are dropped,
# and entries are written followed by a blank line.
make_zh() {
  ensure_packages corpus fortunes-zh
  local tmp src=/usr/share/games/fortunes f
  new_tmp_dir zh
  for f in tang300 song100 chinese; do
    [[ -r "$src/$f" ]] || { echo "error: $src/$f not found (package fortunes-zh)" >&2; exit 1; }
    sed 's/\x1b\[[0-9;]*m//g' "$src/$f"
    printf '\n%%\n'
  done | awk -v dir="$tmp" '
    BEGIN { RS = "\n%\n"; ORS = "\n\n" }
    {
      sub(/\n+$/, "")
      sub(/^\n+/, "")
      if ($0 == "") next
      i = n++
      f = (i % 20 == 18) ? "valid" : (i % 20 == 19) ? "test" : "train"
      print > (dir "/" f ".txt")
    }
    END {
      if (n != 5671) printf "warning: expected 5671 entries, got %d\n", n > "/dev/stderr"
    }'
  install_splits zh "$tmp"
}

for name in kjv zh; do
  [[ -z "$only" || "$only" == "$name" ]] || continue
  if [[ $force -eq 0 ]] && have_corpus "$name"; then
    echo "$name: already present in $data_dir/$name (use --force to rebuild)"
  else
    echo "$name: building"
    "make_$name"
  fi
  report "$name"
done
