#!/usr/bin/env python3
"""bench/cpu_calls_table.py OUT_DIR — Markdown tables from bench/cpu_calls.sh's
files: per shape, threaded / OpenBLAS (ratio of median call times) in every
fresh process, the worst of them, kforge's median GFLOP/s and its slowest
decile over its median, beside OpenBLAS, blocked and Eigen medians."""
import glob
import os
import re
import sys


def parse(path):
    rows = {}
    head = ""
    for line in open(path):
        if line.startswith("# bench_gemm_calls"):
            head = line.strip()
        m = re.match(r"(\d+x\d+x\d+)\s+(threaded|openblas|blocked|eigen)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            shape, peer = m.group(1), m.group(2)
            rows.setdefault(shape, {})[peer] = {
                "first": float(m.group(3)), "median": float(m.group(4)), "p90": float(m.group(5)),
                "gflops": float(m.group(7)), "p90_med": float(m.group(8))}
    return head, rows


def table(files, title):
    runs = [parse(f) for f in files]
    shapes = []
    for _, rows in runs:
        for s in rows:
            if s not in shapes:
                shapes.append(s)
    print(f"\n{title} ({len(runs)} process{'es' if len(runs) > 1 else ''})\n")
    print("| shape | threaded / OpenBLAS, each process | worst | threaded GFLOP/s (median of processes) | threaded p90/median (worst) | OpenBLAS GFLOP/s | blocked | Eigen |")
    print("|---|---|---|---|---|---|---|---|")
    for s in shapes:
        ratios, g, p, ob, bl, ei = [], [], [], [], [], []
        for _, rows in runs:
            r = rows.get(s, {})
            if "threaded" in r and "openblas" in r:
                ratios.append(r["openblas"]["median"] / r["threaded"]["median"])
            if "threaded" in r:
                g.append(r["threaded"]["gflops"])
                p.append(r["threaded"]["p90_med"])
            for peer, lst in (("openblas", ob), ("blocked", bl), ("eigen", ei)):
                if peer in r:
                    lst.append(r[peer]["gflops"])

        def med(v):
            v = sorted(v)
            return v[len(v) // 2] if v else float("nan")

        fmt = lambda v: "—" if v != v else f"{v:.1f}"
        print(f"| {s} | {' '.join(f'{x:.2f}' for x in ratios)} | **{min(ratios):.2f}** | {fmt(med(g))} | {max(p):.2f} | "
              f"{fmt(med(ob))} | {fmt(med(bl))} | {fmt(med(ei))} |" if ratios else f"| {s} | — | — | {fmt(med(g))} | — | — | {fmt(med(bl))} | {fmt(med(ei))} |")


def main():
    out = sys.argv[1]
    first = sorted(glob.glob(os.path.join(out, "first-*.txt")))
    busy = sorted(glob.glob(os.path.join(out, "busy-*.txt")))
    if first:
        table(first, "First calls of fresh processes: one warm-up + 15 calls per shape and peer")
    if os.path.exists(os.path.join(out, "gap.txt")):
        table([os.path.join(out, "gap.txt")], "Calls after 1 ms of sleep: one warm-up + 40 calls per shape and peer")
    if busy:
        table(busy, "A second process spinning on one core: one warm-up + 15 calls per shape and peer")


if __name__ == "__main__":
    main()
