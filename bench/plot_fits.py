#!/usr/bin/env python3
"""Renders the LSTM overhead fits written by bench/lstm_overhead (--csv) as a PNG.

    python3 bench/plot_fits.py build/bench/lstm_overhead.csv docs/lstm_overhead.png

One panel per library: gradient time against batch size for 1, 2 and 3 layers, the measured
medians as points and the least-squares line through them; the intercept (batch 0) divided by
the op count is the per-op overhead printed in the legend.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    points, fits = {}, {}
    with open(src) as f:
        for r in csv.DictReader(f):
            key = (r["lib"], int(r["layers"]))
            if r["kind"] == "point":
                points.setdefault(key, []).append((int(r["batch"]), float(r["seconds"])))
            else:
                fits[key] = (float(r["intercept"]), float(r["slope"]), int(r["ops"]))
    libs = sorted({k[0] for k in points}, key=lambda s: (s != "fluxion", s))
    fig, axes = plt.subplots(1, len(libs), figsize=(5.5 * len(libs), 4.2), squeeze=False)
    for ax, lib in zip(axes[0], libs):
        for layers in sorted(k[1] for k in points if k[0] == lib):
            pts = sorted(points[(lib, layers)])
            a, b, ops = fits[(lib, layers)]
            xs = [p[0] for p in pts]
            line = ax.plot(xs, [p[1] * 1e6 for p in pts], "o", label=None)[0]
            fx = [0] + xs
            ax.plot(fx, [(a + b * x) * 1e6 for x in fx], "-", color=line.get_color(),
                    label=f"{layers} layer{'s' if layers > 1 else ''}: {a * 1e9 / ops:.0f} ns/op ({ops} ops)")
        ax.set_title(f"{lib}: LSTM gradient time vs batch size")
        ax.set_xlabel("batch size")
        ax.set_ylabel("time per gradient (µs)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_fits.py LSTM_CSV OUT_PNG")
    main(sys.argv[1], sys.argv[2])
