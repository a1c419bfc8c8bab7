"""bench/torch_quant.py DIR — compares bench/quant_check.cpp's output (kforge's
codecs) with PyTorch's casts: float32 -> float8_e4m3fn / float8_e5m2 on every
input, and every code of float8_e4m3fn, float8_e5m2, float8_e8m0fnu and
float4_e2m1fn_x2 -> float32. Prints one line per check; exit 1 on a mismatch."""
import sys

import numpy as np
import torch

d = sys.argv[1]
bad = 0


def report(name, ours, theirs):
    global bad
    ours = np.asarray(ours)
    theirs = np.asarray(theirs)
    if ours.dtype.kind == "f":
        same = (ours.view(np.uint32) == theirs.view(np.uint32)) | (np.isnan(ours) & np.isnan(theirs))
    else:
        same = ours == theirs
    n = int((~same).sum())
    bad += n
    first = "" if n == 0 else f" first at {int(np.argmax(~same))}: ours {ours[~same][0]!r} torch {theirs[~same][0]!r}"
    print(f"{name}: {len(same)} compared, {n} differ{first}")


x = np.fromfile(f"{d}/inputs.f32", dtype=np.float32)
xt = torch.from_numpy(x)
for fmt, dt in (("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
    ours = np.fromfile(f"{d}/{fmt}.u8", dtype=np.uint8)
    theirs = xt.to(dt).view(torch.uint8).numpy()
    # NaN inputs: any NaN code of the sign is a NaN; compare the decoded values there.
    nan_in = np.isnan(x)
    report(f"float32 -> {fmt} (non-NaN inputs)", ours[~nan_in], theirs[~nan_in])
    codes = torch.arange(256, dtype=torch.uint8)
    dec = codes.view(dt).to(torch.float32).numpy()
    report(f"{fmt} -> float32 (every code)", np.fromfile(f"{d}/dec_{fmt}.f32", dtype=np.float32), dec)
    report(f"{fmt} NaN inputs stay NaN", np.isnan(np.fromfile(f"{d}/dec_{fmt}.f32", dtype=np.float32)[ours[nan_in]]),
           np.ones(int(nan_in.sum()), dtype=bool))
codes = torch.arange(256, dtype=torch.uint8)
try:
    e8 = codes.view(torch.float8_e8m0fnu).to(torch.float32).numpy()
    report("e8m0 -> float32 (every code)", np.fromfile(f"{d}/dec_e8m0.f32", dtype=np.float32), e8)
except Exception as e:  # noqa: BLE001
    print("e8m0: PyTorch cannot cast:", e)
    bad += 1
try:
    packed = torch.arange(16, dtype=torch.uint8) | (torch.arange(16, dtype=torch.uint8) << 4)
    e2 = packed.view(torch.float4_e2m1fn_x2)
    vals = None
    for attempt in ("to", "unpack"):
        try:
            vals = e2.to(torch.float32).numpy() if attempt == "to" else None
            break
        except Exception as e:  # noqa: BLE001
            print("e2m1: .to(float32) refused:", e)
    if vals is not None:
        report("e2m1 -> float32 (every code, low nibble)", np.fromfile(f"{d}/dec_e2m1.f32", dtype=np.float32), vals[::2] if len(vals) == 32 else vals)
except Exception as e:  # noqa: BLE001
    print("e2m1: PyTorch has no float4_e2m1fn_x2 here:", e)
print("torch", torch.__version__, "mismatches:", bad)
sys.exit(1 if bad else 0)
