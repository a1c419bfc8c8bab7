# bench/result_table.py — joins the `RESULT <case> <ms> <rate> <unit>` lines of
# a kforge run and its PyTorch peer into one table (bench/h100_attention.sh).
# Ratio = PyTorch time / kforge time: above 1 means kforge is faster.
#
#   python3 bench/result_table.py KFORGE_OUTPUT TORCH_OUTPUT
import sys


def parse(path):
    d = {}
    for line in open(path):
        if line.startswith("RESULT "):
            _, name, ms, rate, unit = line.split()
            d[name] = (float(ms), float(rate), unit)
    return d


kf, pt = parse(sys.argv[1]), parse(sys.argv[2])
print(f"{'case':44s} {'kforge ms':>10s} {'rate':>9s} {'unit':8s} {'torch ms':>10s} {'rate':>9s} {'torch/kforge':>12s}")
for name, (ms, rate, unit) in kf.items():
    p = pt.get(name)
    print(f"{name:44s} {ms:10.4f} {rate:9.2f} {unit:8s} " +
          (f"{p[0]:10.4f} {p[1]:9.2f} {p[0] / ms:12.2f}" if p else f"{'-':>10s} {'-':>9s} {'-':>12s}"))
