#!/usr/bin/env python3
"""Writes a word corpus the size and shape of WikiText-103, for timing and memory checks.

Words are drawn independently from a Zipf distribution (p(rank r) ~ 1 / r) over --types
distinct words, spelled in lower-case letters (frequent words short), --words-per-line words
a line. The defaults match WikiText-103: 103,227,021 training tokens with line ends (about
470 MB), 267,735 types, and valid/test splits of 217,646 and 245,569 tokens. Nothing in it
is language: it measures tokenizing, counting, memory and speed, never perplexity.

Usage: scripts/make_zipf_corpus.py OUT_DIR [--train-tokens N] [--types N] [--seed N]
Needs only Python 3 (no packages); about 4 minutes for the default size on one core.
"""
import argparse
import itertools
import os
import random
import string
import sys


def spelling(rank):
    """The rank-th word: base-26 letters, so the most frequent words are the shortest."""
    letters = string.ascii_lowercase
    n = rank + 26 * 26  # three letters at least: WikiText-103 averages 4.5 bytes a token
    out = []
    while n > 0:
        n, r = divmod(n, 26)
        out.append(letters[r])
    return "".join(reversed(out))


def write_split(path, tokens, words, cum_weights, words_per_line, rng):
    """Writes about `tokens` tokens (words plus one line end per line) to path."""
    per_line = words_per_line + 1
    lines = max(1, tokens // per_line)
    chunk = 10000
    with open(path, "w", encoding="ascii") as f:
        done = 0
        while done < lines:
            n = min(chunk, lines - done)
            drawn = rng.choices(words, cum_weights=cum_weights, k=n * words_per_line)
            f.write("".join(" ".join(drawn[i * words_per_line:(i + 1) * words_per_line]) + "\n"
                            for i in range(n)))
            done += n
            if path.endswith("train.txt") and done % 200000 < chunk:
                print(f"{path}: {done * per_line:,} of {lines * per_line:,} tokens",
                      file=sys.stderr)
    return lines * per_line


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--train-tokens", type=int, default=103227021)
    parser.add_argument("--valid-tokens", type=int, default=217646)
    parser.add_argument("--test-tokens", type=int, default=245569)
    parser.add_argument("--types", type=int, default=267733,
                        help="distinct words (WikiText-103's 267,735 less <unk> and <eos>)")
    parser.add_argument("--words-per-line", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name in ("train_tokens", "valid_tokens", "test_tokens", "types", "words_per_line"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if os.path.exists(args.out_dir) and os.listdir(args.out_dir):
        parser.error(f"{args.out_dir}: exists and is not empty; choose a new folder")
    os.makedirs(args.out_dir, exist_ok=True)

    words = [spelling(r) for r in range(args.types)]
    cum_weights = list(itertools.accumulate(1.0 / (r + 1) for r in range(args.types)))
    rng = random.Random(args.seed)
    for split, tokens in (("train", args.train_tokens), ("valid", args.valid_tokens),
                          ("test", args.test_tokens)):
        path = os.path.join(args.out_dir, split + ".txt")
        written = write_split(path, tokens, words, cum_weights, args.words_per_line, rng)
        print(f"wrote {path}: {written:,} tokens, {os.path.getsize(path):,} bytes",
              file=sys.stderr)


if __name__ == "__main__":
    main()
