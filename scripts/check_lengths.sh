#!/usr/bin/env bash
# Checks the house limits on size: no function in src/ or include/ over 70 lines, no file in
# src/ over 420 lines (the style aims at ~60 and ~400; the margin keeps a small edit from
# failing the build). A function's lines run from the end of the statement before it, so the
# comment above its signature counts. A longer file or function passes when a comment says
# why, naming the length it exceeds ("... stays over 400 lines because ..."): for a file, in
# the comment block it opens with; for a function, in the comment right above it. Prints each
# violation as file:line and exits 1 when there is one. Needs python3 (scripts/lint.sh
# installs it).
# Usage: scripts/check_lengths.sh [FILE...]   (default: every tracked file under src/, include/)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"
cd "$repo"

max_function=70
max_file=420

files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  # The tracked C++ files; every C++ file under the source folders where there is no git.
  if listing="$(git ls-files 'src/*.cpp' 'src/*.h' 'include/*.h' 2>/dev/null)"; then :; else
    listing="$(find src include -name '*.cpp' -o -name '*.h' | sort)"
  fi
  while IFS= read -r f; do if [[ -n "$f" ]]; then files+=("$f"); fi; done <<<"$listing"
fi

status=0
python3 - "$max_function" "$max_file" "${files[@]}" <<'PY' || status=$?
import re
import sys

max_function, max_file = int(sys.argv[1]), int(sys.argv[2])
# A comment that gives a length in lines: "over 400 lines", "~60 lines".
reason = re.compile(r"\b\d+ lines\b")


def blank_out(text):
    """The text with comments, string and character literals replaced by spaces (newlines
    kept), so that braces inside them are not counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i) + 2
        elif text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            delim = re.match(r'R"([^(]*)\(', text[i:]).group(1)
            j = text.find(")" + delim + '"', i) + len(delim) + 2
        elif text[i] == '"' or (text[i] == "'" and not (i > 0 and text[i - 1].isdigit())):
            j = i + 1
            while text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def comment_above(lines, first):
    """The // comment lines directly above line index `first` (0-based)."""
    above = []
    k = first - 1
    while k >= 0 and lines[k].strip().startswith("//"):
        above.append(lines[k])
        k -= 1
    return "\n".join(above)


def opening_comment(lines):
    block = []
    for line in lines:
        if not line.strip().startswith("//"):
            break
        block.append(line)
    return "\n".join(block)


function_open = re.compile(
    r"\)\s*(const|override|noexcept|final|mutable|\s|->\s*[\w:<>,\s*&]+)*$")
control_open = re.compile(r"\b(if|for|while|switch|catch)\s*\([^;{}]*\)\s*$")

violations = 0
for path in sys.argv[3:]:
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    code = blank_out(text)
    count = text.count("\n")
    if path.startswith("src/") and count > max_file:
        if not reason.search(opening_comment(lines)):
            print(f"[lengths] {path}: {count} lines (limit {max_file}); split it, or "
                  "say why it stays this long in its opening comment", file=sys.stderr)
            violations += 1
    stack = []  # (offset of '{', is a function body, inside a function body)
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            before = code[max(0, m.start() - 300):m.start()]
            is_function = bool(function_open.search(before)) and not control_open.search(before)
            stack.append((m.start(), is_function, any(entry[1] for entry in stack)))
            continue
        start, is_function, nested = stack.pop()
        if not is_function or nested:
            continue
        # From the end of the statement before the signature to the closing brace.
        prev = max(code.rfind(";", 0, start), code.rfind("}", 0, start), code.rfind("{", 0, start))
        first = code.count("\n", 0, prev + 1)
        last = code.count("\n", 0, m.start())
        length = last - first + 1
        if length <= max_function:
            continue
        # The signature's first line: the first line after `prev` that is neither blank nor
        # a comment.
        from_line = first + 1 if prev >= 0 else 0
        signature_line = from_line + next(
            (k for k, line in enumerate(lines[from_line:last + 1]) if line.strip() and
             not line.strip().startswith("//")), 0)
        if reason.search(comment_above(lines, signature_line)):
            continue
        signature = " ".join(code[prev + 1:start].split())[:80]
        print(f"[lengths] {path}:{signature_line + 1}: {signature} is {length} lines "
              f"(limit {max_function}); split it into its phases", file=sys.stderr)
        violations += 1

if violations:
    print(f"[lengths] {violations} over the limits", file=sys.stderr)
    sys.exit(1)
print(f"[lengths] {len(sys.argv) - 3} files: functions within {max_function} lines, "
      f"src files within {max_file}")
PY
exit "$status"
