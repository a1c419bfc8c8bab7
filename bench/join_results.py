# bench/join_results.py — one table of kforge's and its peer's `RESULT <case>
# <ms> <rate> <unit>` lines (the device scripts' last step), joined by case
# name: both times and rates, and ratio = peer time / kforge time (above 1:
# kforge is faster).
#
#   python3 bench/join_results.py KFORGE_OUTPUT PEER_OUTPUT
import sys


def parse(path):
    d = {}
    for line in open(path):
        if line.startswith("RESULT "):
            _, name, ms, rate, unit = line.split()
            d[name] = (float(ms), float(rate), unit)
    return d


kf, pt = parse(sys.argv[1]), parse(sys.argv[2])
w = max([len(n) for n in kf] + [4])
u = max([len(v[2]) for v in kf.values()] + [4])
print(f"{'case':{w}s} {'kforge ms':>10s} {'rate':>9s} {'unit':{u}s} {'peer ms':>10s} {'rate':>9s} {'peer/kforge':>12s}")
for name, (ms, rate, unit) in kf.items():
    p = pt.get(name)
    print(f"{name:{w}s} {ms:10.4f} {rate:9.2f} {unit:{u}s} " +
          (f"{p[0]:10.4f} {p[1]:9.2f} {p[0] / ms:12.2f}" if p else f"{'-':>10s} {'-':>9s} {'-':>12s}"))
