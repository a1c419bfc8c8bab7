#!/usr/bin/env python3
"""bench/cpu_calls_table.py OUT_DIR — the Markdown tables of issue 14 from
bench/cpu_calls.sh's files, each with the target it is checked against:

- call-by-call gemm (first-N, gap, busy-N): per shape, threaded / OpenBLAS
  (ratio of median call times) in every process and the worst of them,
  kforge's median GFLOP/s and its slowest decile (p90) over its median,
  beside OpenBLAS, blocked and Eigen;
- the user program with the workers' placement off (noaff-N);
- the pool's spin (gap vs gap-nospin), calls after 5 ms of idle (idle) and
  the caller-alone threshold
  (threshold-*: threaded with the threshold off vs blocked);
- gemm.json: fused bias+gelu vs gemm then a separate pass; decode rows vs copy;
- ops.json: softmax / layer_norm / rms_norm vs copy.
"""
import glob
import json
import os
import re
import sys

ROW = re.compile(r"(\d+x\d+x\d+)\s+(threaded|openblas|blocked|eigen)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def parse(path):
    rows, head = {}, ""
    for line in open(path):
        if line.startswith("# bench_gemm_calls"):
            head = line.strip()
        m = ROW.match(line)
        if m:
            rows.setdefault(m.group(1), {})[m.group(2)] = {
                "first": float(m.group(3)), "median": float(m.group(4)), "p90": float(m.group(5)),
                "gflops": float(m.group(7)), "p90_med": float(m.group(8))}
    return head, rows


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def fmt(v, d=1):
    return "—" if v != v else f"{v:.{d}f}"


def loads(runs):
    out = []
    for head, _ in runs:
        m = re.search(r'loadavg="([\d.]+)', head)
        out.append(m.group(1) if m else "?")
    return ", ".join(out)


def shapes_of(runs):
    shapes = []
    for _, rows in runs:
        for s in rows:
            if s not in shapes:
                shapes.append(s)
    return shapes


def calls_table(files, title, target):
    runs = [parse(f) for f in files]
    print(f"\n#### {title}\n")
    print(f"{len(runs)} process{'es' if len(runs) > 1 else ''}; 1-minute load average at each start: {loads(runs)}. "
          f"Target: {target}.\n")
    print("| shape | threaded / OpenBLAS, each process | worst | threaded GFLOP/s | threaded p90 / median (worst) "
          "| OpenBLAS GFLOP/s | blocked | Eigen |")
    print("|---|---|---|---|---|---|---|---|")
    for s in shapes_of(runs):
        ratios, g, p, peers = [], [], [], {"openblas": [], "blocked": [], "eigen": []}
        for _, rows in runs:
            r = rows.get(s, {})
            if "threaded" in r and "openblas" in r:
                ratios.append(r["openblas"]["median"] / r["threaded"]["median"])
            if "threaded" in r:
                g.append(r["threaded"]["gflops"])
                p.append(r["threaded"]["p90_med"])
            for peer, lst in peers.items():
                if peer in r:
                    lst.append(r[peer]["gflops"])
        each = " ".join(f"{x:.2f}" for x in ratios) or "—"
        worst = f"**{min(ratios):.2f}**" if ratios else "—"
        print(f"| {s} | {each} | {worst} | {fmt(med(g))} | {fmt(max(p) if p else float('nan'), 2)} | "
              f"{fmt(med(peers['openblas']))} | {fmt(med(peers['blocked']))} | {fmt(med(peers['eigen']))} |")


def spin_table(out):
    a, b = os.path.join(out, "gap.txt"), os.path.join(out, "gap-nospin.txt")
    if not (os.path.exists(a) and os.path.exists(b)):
        return
    (ha, ra), (hb, rb) = parse(a), parse(b)
    print("\n#### The pool's spin: calls 1 ms apart, threaded with the 2 ms spin vs without (every call wakes a worker)\n")
    print(f"Load average at start: {loads([(ha, ra), (hb, rb)])}. The difference of the medians is what a futex "
          "wake-up costs a call.\n")
    print("| shape | threaded median µs, spin 2 ms | p90 | spin 0 | p90 | difference of medians µs | OpenBLAS median µs (same process as spin 0) |")
    print("|---|---|---|---|---|---|---|")
    for s in ra:
        if s in rb and "threaded" in ra[s] and "threaded" in rb[s]:
            x, y = ra[s]["threaded"], rb[s]["threaded"]
            ob = rb[s].get("openblas", {}).get("median", float("nan"))
            print(f"| {s} | {x['median']:.1f} | {x['p90']:.1f} | {y['median']:.1f} | {y['p90']:.1f} | "
                  f"{y['median'] - x['median']:+.1f} | {fmt(ob)} |")


def idle_table(out):
    path = os.path.join(out, "idle.txt")
    if not os.path.exists(path):
        return
    head, rows = parse(path)
    print("\n#### Calls after 5 ms of idle (the workers asleep): threaded with its default thresholds vs blocked\n")
    print(f"Load average at start: {loads([(head, rows)])}. Ratio = blocked median time / threaded median time. Below "
          "the wake threshold (2·224³ flops) the caller runs alone and wakes nobody, so the ratio is about 1 there.\n")
    print("| shape | threaded median µs | p90 | blocked median µs | blocked / threaded |")
    print("|---|---|---|---|---|")
    for s, r in rows.items():
        if "threaded" in r and "blocked" in r:
            t, b = r["threaded"], r["blocked"]
            print(f"| {s} | {t['median']:.1f} | {t['p90']:.1f} | {b['median']:.1f} | {b['median'] / t['median']:.2f} |")


def threshold_table(out):
    first = sorted(glob.glob(os.path.join(out, "threshold-first-*.txt")))
    gap = os.path.join(out, "threshold-gap.txt")
    if not first:
        return
    runs = [parse(f) for f in first]
    gap_rows = parse(gap)[1] if os.path.exists(gap) else {}
    print("\n#### Caller-alone threshold: threaded with it off (KFORGE_GEMM_PARALLEL_MIN_FLOPS=0) vs blocked (one thread)\n")
    print(f"Ratio = blocked median time / threaded median time (> 1: the pool's threads pay). Back to back: "
          f"{len(runs)} processes, load averages {loads(runs)}.\n")
    print("| shape | back to back, each process | after 1 ms gaps | threaded median µs (back to back) | blocked median µs |")
    print("|---|---|---|---|---|")
    for s in shapes_of(runs):
        ratios, tm, bm = [], [], []
        for _, rows in runs:
            r = rows.get(s, {})
            if "threaded" in r and "blocked" in r:
                ratios.append(r["blocked"]["median"] / r["threaded"]["median"])
                tm.append(r["threaded"]["median"])
                bm.append(r["blocked"]["median"])
        g = gap_rows.get(s, {})
        gr = g["blocked"]["median"] / g["threaded"]["median"] if "threaded" in g and "blocked" in g else float("nan")
        print(f"| {s} | {' '.join(f'{x:.2f}' for x in ratios)} | {fmt(gr, 2)} | {fmt(med(tm))} | {fmt(med(bm))} |")


def gbench(path):
    """name -> median record of a Google Benchmark JSON file (aggregates)."""
    if not os.path.exists(path):
        return {}, {}
    data = json.load(open(path))
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        out[name[: -len("/real_time")] if name.endswith("/real_time") else name] = b
    return out, data.get("context", {})


def load_of(ctx):
    return ", ".join(f"{x:.1f}" for x in ctx.get("load_avg", [])) or "?"


def ms(b):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
    return b["real_time"] * scale


def gemm_tables(out):
    g, ctx = gbench(os.path.join(out, "gemm.json"))
    if not g:
        return
    print(f"\n#### gemm + bias + gelu: fused write-back vs gemm then one separate pass (median of 3; "
          f"{ctx.get('date', '')}, load {load_of(ctx)})\n")
    print("Target: fused ≥ 1.15× unfused (unfused time / fused time). The plain gemm bounds what fusion can win.\n")
    print("| shape | policy | fused ms | unfused ms | plain gemm ms | unfused / fused | unfused / plain gemm (the bound) |")
    print("|---|---|---|---|---|---|---|")
    shapes = []
    for name in g:
        m = re.match(r"bias_gelu/fused/(\w+)/(.+)", name)
        if m and m.group(2) not in shapes:
            shapes.append(m.group(2))
    for s in shapes:
        for pol in ("threaded", "blocked"):
            f, u = g.get(f"bias_gelu/fused/{pol}/{s}"), g.get(f"bias_gelu/unfused/{pol}/{s}")
            p = g.get(f"bias_gelu/gemm_only/{pol}/{s}")
            if not (f and u):
                continue
            pm = ms(p) if p else float("nan")
            print(f"| {s} | {pol} | {ms(f):.3f} | {ms(u):.3f} | {fmt(pm, 3)} | **{ms(u) / ms(f):.2f}** | "
                  f"{fmt(ms(u) / pm if p else float('nan'), 2)} |")

    copies = {k: v for k, v in g.items() if k.startswith("copy/")}
    print("\n#### Decode rows: M × 4096 × 14336, threaded, GB/s of B read vs a threaded copy of the same bytes (median of 3)\n")
    print("Copy GB/s counts bytes read + written (as bench_ops). Target: decode ≥ 85 % of copy.\n")
    print("| shape | B dtype | ms | GB/s of B | copy GB/s (same bytes) | decode / copy |")
    print("|---|---|---|---|---|---|")
    for name, b in g.items():
        m = re.match(r"decode/(\w+)/(.+)", name)
        if not m:
            continue
        copy = copies.get("copy/threads/235MiB" if m.group(1) == "f32" else "copy/threads/117MiB")
        cg = copy["GB/s"] if copy else float("nan")  # the counters are already GB/s (rates of 1e-9 bytes)
        dg = b["GB/s"]
        print(f"| {m.group(2)} | {m.group(1)} | {ms(b):.3f} | {dg:.1f} | {fmt(cg)} | **{100 * dg / cg:.0f} %** |")


def ops_table(out):
    g, ctx = gbench(os.path.join(out, "ops.json"))
    if not g:
        return

    def gbs(b):
        return b.get("GB/s", float("nan"))  # already GB/s (a rate of 1e-9 bytes)

    copy_t, copy_1 = g.get("copy/threads/4096x4096"), g.get("copy/1thread/4096x4096")
    print(f"\n#### Row ops 4096 × 4096 f32, GB/s of bytes read + written (median of 3; {ctx.get('date', '')}, "
          f"load {load_of(ctx)})\n")
    print(f"Copy in the same run: threaded {fmt(gbs(copy_t)) if copy_t else '—'} GB/s, one thread "
          f"{fmt(gbs(copy_1)) if copy_1 else '—'} GB/s. Target: threaded ≥ 80 % of the threaded copy.\n")
    print("| op | Eigen GB/s | blocked GB/s | threaded GB/s | threaded / copy |")
    print("|---|---|---|---|---|")
    for op in ("softmax", "layer_norm", "rms_norm"):
        row = [g.get(f"{op}/4096x4096/{p}") for p in ("eigen", "blocked", "threaded")]
        if not any(row):
            continue
        vals = [gbs(b) if b else float("nan") for b in row]
        ratio = f"**{100 * vals[2] / gbs(copy_t):.0f} %**" if copy_t and row[2] else "—"
        print(f"| {op} | {fmt(vals[0])} | {fmt(vals[1])} | {fmt(vals[2])} | {ratio} |")


def main():
    out = sys.argv[1]
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        print("```")
        print(open(meta).read().rstrip())
        print("```")
    first = sorted(glob.glob(os.path.join(out, "first-*.txt")))
    busy = sorted(glob.glob(os.path.join(out, "busy-*.txt")))
    if first:
        calls_table(first, "The user program: first calls of fresh processes, one warm-up + 15 calls per shape and peer",
                    "worst ≥ 1.0 at n = 128…2048; p90 / median ≤ 1.5")
    if os.path.exists(os.path.join(out, "gap.txt")):
        calls_table([os.path.join(out, "gap.txt")], "Calls after 1 ms of sleep: one warm-up + 40 calls per shape and peer",
                    "≥ 1.0 at 256 and 512")
    if busy:
        calls_table(busy, "A second process spinning on one core: one warm-up + 15 calls per shape and peer",
                    "≥ 0.9")
    noaff = sorted(glob.glob(os.path.join(out, "noaff-*.txt")))
    if noaff:
        calls_table(noaff, "The user program with KFORGE_POOL_AFFINITY=0 (the workers where the scheduler puts them)",
                    "none: the same processes as the first table but for the workers' placement")
    spin_table(out)
    idle_table(out)
    threshold_table(out)
    gemm_tables(out)
    ops_table(out)


if __name__ == "__main__":
    main()
