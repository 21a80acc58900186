#!/usr/bin/env python3
"""Draws copy gain against distance from `txl eval --probes copy --json` files, one line per
file with its interval band (log2 x), into a PNG with gnuplot: the picture of
docs/probes.md's known positives beside a trained model.

Usage: scripts/plot_copy_gain.py OUT.png LABEL=EVAL.json [LABEL=EVAL.json ...]
"""
import json
import os
import subprocess
import sys
import tempfile

SERIES = "copy gain (nats/token)"


def copy_gain(path):
    """(d, gain, lo, hi) rows of the copy probe's gain in one eval JSON file."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    try:
        metrics = report["probes"]["copy"]["metrics"]
    except (KeyError, TypeError):
        sys.exit(f"error: {path} holds no copy probe (run txl eval --probes copy --json FILE)")
    rows = [(m["x"], m["value"], m.get("lo", m["value"]), m.get("hi", m["value"]))
            for m in metrics if m["series"] == SERIES]
    return sorted(rows)


def main(argv):
    if len(argv) < 3 or not argv[1].endswith(".png") or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__.strip().splitlines()[-1])
    out, runs = argv[1], [a.split("=", 1) for a in argv[2:]]
    with tempfile.TemporaryDirectory() as tmp:
        plots = []
        for i, (label, path) in enumerate(runs):
            data = os.path.join(tmp, f"{i}.dat")
            with open(data, "w", encoding="utf-8") as f:
                for row in copy_gain(path):
                    f.write("%g %g %g %g\n" % row)
            plots.append(f"'{data}' using 1:3:4 with filledcurves fs transparent solid 0.2 "
                         f"lc {i + 1} notitle")
            title = label.replace("'", "''")  # gnuplot's single quotes
            plots.append(f"'{data}' using 1:2 with linespoints lw 2 pt 7 lc {i + 1} "
                         f"title '{title}'")
        script = "\n".join([
            "set terminal pngcairo size 900,520 font ',11'",
            f"set output '{out}'",
            "set logscale x 2",
            "set xlabel 'distance d between the span and its repetition (tokens, log2 scale)'",
            "set ylabel 'copy gain (nats/token)'",
            "set title 'Copy gain against distance, 95% interval over instances'",
            "set key center right",
            "set grid",
            "plot " + ", \\\n  ".join(plots),
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv)
