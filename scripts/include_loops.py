#!/usr/bin/env python3
"""Finds include loops between rooms of the library, from its `#include "txl/..."` lines.

Two sizes of room:
  file    a header and its source together: include/txl/eval/protocol.h and
          src/eval/protocol.cpp are the room eval/protocol;
  folder  the folder a room lies in: eval, eval/protocols, model/encodings.
Room A includes room B when any file of A includes a header of B. A loop is a set of two or
more rooms each of which reaches every other (a strongly connected component); it is shown
with the includes that close it. Loops between the top folders are check_layers.sh's.

The loops the tree has now are listed in scripts/include_loops.known, one a line as the
rooms in sorted order joined by " <-> " ("#" starts a comment). A loop not listed there
fails the check; so does a listed one that is gone (take its line out, so that it cannot
come back unnoticed).

Usage: scripts/include_loops.py [--list]   (--list: print the loops, check nothing)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KNOWN = os.path.join(ROOT, "scripts", "include_loops.known")
INCLUDE = re.compile(r'^\s*#\s*include\s+"txl/([^"]+)\.h"', re.M)


def rooms():
    """{file room: [(path, line number, included room)]} for every file of the library."""
    found = {}
    for top, prefix in (("include/txl", "include/txl/"), ("src", "src/")):
        for folder, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.relpath(os.path.join(folder, name), ROOT).replace(os.sep, "/")
                room = os.path.splitext(path[len(prefix):])[0]
                if "/" not in room:
                    continue  # torch_pch.h: no folder
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    text = f.read()
                edges = found.setdefault(room, [])
                for m in INCLUDE.finditer(text):
                    edges.append((path, text.count("\n", 0, m.start()) + 1, m.group(1)))
    return found


def graph(edges_of, size):
    """{room: {included room: first (path, line)}} at `size` ("file" or "folder")."""
    def name(room):
        return room if size == "file" else os.path.dirname(room)

    g = {}
    for room, edges in edges_of.items():
        out = g.setdefault(name(room), {})
        for path, line, target in edges:
            if name(target) != name(room):
                out.setdefault(name(target), (path, line))
                g.setdefault(name(target), {})
    return g


def loops(g):
    """The strongly connected components of more than one room (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def known_loops():
    if not os.path.exists(KNOWN):
        return set()
    with open(KNOWN, encoding="utf-8") as f:
        lines = (line.split("#", 1)[0].strip() for line in f)
        return {line for line in lines if line}


def main(argv):
    if argv not in ([], ["--list"]):
        print(f"error: unknown arguments {' '.join(argv)} (expected --list or nothing)",
              file=sys.stderr)
        return 2
    edges_of = rooms()
    found = {}
    for size in ("folder", "file"):
        g = graph(edges_of, size)
        for component in loops(g):
            members = set(component)
            closing = [f"{a} -> {b} ({path}:{line})" for a in component
                       for b, (path, line) in sorted(g[a].items()) if b in members]
            found[" <-> ".join(component)] = (size, closing)
    known = known_loops()
    if argv == ["--list"]:
        for key, (size, closing) in found.items():
            print(f"{size} loop: {key}")
            for c in closing:
                print(f"    {c}")
        print(f"[include-loops] {len(found)} loops")
        return 0
    new = [key for key in found if key not in known]
    gone = sorted(known - set(found))
    for key in new:
        size, closing = found[key]
        print(f"[include-loops] new {size} loop: {key}", file=sys.stderr)
        for c in closing:
            print(f"    {c}", file=sys.stderr)
    for key in gone:
        print(f"[include-loops] {key} is no longer a loop: take its line out of "
              f"{os.path.relpath(KNOWN, ROOT)}", file=sys.stderr)
    if new or gone:
        print("HINT: break a new loop (a base header both sides include), or list it in "
              "scripts/include_loops.known with the reason", file=sys.stderr)
        return 1
    print(f"[include-loops] {len(edges_of)} rooms: no include loop but the {len(found)} "
          f"known ones (scripts/include_loops.known)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
