# bench/torch_timing.py — how the PyTorch peers time a call: the GPU busy for
# warm_s seconds first (the H100 idles at 345 MHz and boosts to 1980 MHz only
# under sustained load: docs/bench/HISTORY.md, "the slow memory corner is the
# GPU's clock"), then the median of `reps` calls, each between CUDA events.
import time

import torch


def med(f, reps=10, warm_s=0.25):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        for _ in range(8):
            f()
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]
