#!/usr/bin/env bash
# Writes the copier's corpora (txl issue 58): random word-level token sequences in which spans
# recur at random distances, and a control with the same statistics where spans never recur.
#   DIR/copy/{train,valid,test}.txt     blocks of n tokens (n from 12 to 24): 3 in 4 of them
#                                       repeat the n tokens that start gap + n tokens back
#                                       (gap from 0 to 64), the rest are fresh tokens drawn
#                                       uniformly from 100 words
#   DIR/control/{train,valid,test}.txt  the same blocks with every block fresh: the same
#                                       lengths, lines and (uniform) word frequencies, but no
#                                       span recurs except by chance (100^-n)
# Words are w0 .. w99, 1024 a line: the word tokenizer adds <eos> at each line's end, and a
# shorter period would be a clock the model learns (a copied span would then break it).
# The random numbers are Park and Miller's minimal standard generator, exact in any awk, so
# a seed gives the same files everywhere. configs/copier-relative.json and
# configs/copier-control.json train on DIR=data/copier (the default).
#
# Usage: data/make_copy_corpus.sh [DIR] [--seed N] [--tokens N]
#   DIR          where to write copy/ and control/ (default data/copier); existing files
#                there are replaced
#   --seed N     seed of the generator, 1 .. 2147483646 (default 1)
#   --tokens N   tokens in train.txt, >= 10000 (default 2000000; valid and test get N / 100)
#
# Needs bash and awk.
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/lib.sh"

export LC_ALL=C

readonly WORDS=100 SPAN_MIN=12 SPAN_MAX=24 GAP_MAX=64 COPY_PERCENT=75 PER_LINE=1024

dir="data/copier"
seed=1
tokens=2000000
dir_given=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seed | --tokens)
      [[ $# -ge 2 ]] || { echo "error: $1 needs a value" >&2; exit 2; }
      [[ "$2" =~ ^[0-9]+$ ]] || { echo "error: $1 $2 is not a whole number" >&2; exit 2; }
      if [[ "$1" == --seed ]]; then seed="$2"; else tokens="$2"; fi
      shift 2
      ;;
    -*) echo "error: unknown option '$1' (expected DIR, --seed N, --tokens N)" >&2; exit 2 ;;
    *)
      [[ $dir_given -eq 0 ]] || { echo "error: a second DIR '$1' (one only)" >&2; exit 2; }
      dir="$1"
      dir_given=1
      shift
      ;;
  esac
done
if ((${#seed} > 10 || seed < 1 || seed > 2147483646)); then
  echo "error: --seed $seed is not valid; expected 1 .. 2147483646" >&2
  exit 2
fi
if ((${#tokens} > 10 || tokens < 10000)); then
  echo "error: --tokens $tokens is not valid; expected a whole number from 10000 to 9999999999" >&2
  exit 2
fi

# One split: `n` tokens from generator state `state` (fresh blocks only when control=1).
write_split() {
  local out="$1" n="$2" state="$3" control="$4"
  awk -v n="$n" -v state="$state" -v control="$control" -v words="$WORDS" \
    -v span_min="$SPAN_MIN" -v span_max="$SPAN_MAX" -v gap_max="$GAP_MAX" \
    -v copy_percent="$COPY_PERCENT" -v per_line="$PER_LINE" '
    # Park and Miller: state * 16807 mod (2^31 - 1), below 2^46, exact in a double.
    function next_int(k) { state = (state * 16807) % 2147483647; return state % k }
    BEGIN {
      len = 0
      while (len < n) {
        span = span_min + next_int(span_max - span_min + 1)
        gap = next_int(gap_max + 1)
        copy = next_int(100) < copy_percent
        from = len - gap - span
        for (i = 0; i < span && len < n; i++) {
          if (copy && !control && from >= 0) tok[len] = tok[from + i]
          else tok[len] = next_int(words)
          len++
        }
      }
      for (i = 0; i < n; i++) printf "w%d%s", tok[i], ((i + 1) % per_line == 0 || i == n - 1) ? "\n" : " "
    }' >"$out"
}

for kind in copy control; do
  mkdir -p "$dir/$kind"
  control=0
  [[ $kind == control ]] && control=1
  # The splits draw from different states, the same in both corpora.
  write_split "$dir/$kind/train.txt.tmp.$$" "$tokens" "$seed" "$control"
  write_split "$dir/$kind/valid.txt.tmp.$$" "$((tokens / 100))" "$(((seed * 7919) % 2147483646 + 1))" "$control"
  write_split "$dir/$kind/test.txt.tmp.$$" "$((tokens / 100))" "$(((seed * 104729) % 2147483646 + 1))" "$control"
  for split in train valid test; do mv "$dir/$kind/$split.txt.tmp.$$" "$dir/$kind/$split.txt"; done
  echo "$dir/$kind: $(wc -w <"$dir/$kind/train.txt") / $(wc -w <"$dir/$kind/valid.txt") / $(wc -w <"$dir/$kind/test.txt") words (train / valid / test)"
done
