# bench/torch_models.py — PyTorch peers of bench/vk_models.cpp: the cases of
# bench/model_shapes.txt (same names, ops, dtypes and shapes in kforge's SHAPE
# order), printed as `RESULT <name> <op> <dtype> <ms> <rate> <unit>`.
# CUDA events, median of 10 after 0.25 s of warm-up (bench/torch_timing.py); TF32 off (cuBLAS and cuDNN in
# true fp32); inputs uniform in [-1, 1]. What each op runs: gemm A @ B (B
# [K, N]); attention F.scaled_dot_product_attention (is_causal, enable_gqa for
# K/V with fewer heads); softmax torch.softmax(x, -1); layer_norm and rms_norm
# F.layer_norm / F.rms_norm; rope the Hugging Face formula on [S, H, D] (eager:
# several kernels, as a user runs it); element-wise ops their torch function;
# copy Tensor.copy_; conv2d F.conv2d (cuDNN).
import sys
import torch

from torch_timing import med

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
F = torch.nn.functional




def dims(s):
    return [int(x) for x in s.split("x")]


def rnd(shape, dt, lo=-1.0, hi=1.0):
    return torch.rand(*shape, device="cuda", dtype=dt) * (hi - lo) + lo


def case(name, op, dtype, shape, opts):
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    parts = shape.split(",")
    d0 = dims(parts[0])
    flags = {o.split("=")[0]: (o.split("=")[1] if "=" in o else "1") for o in opts}
    nbytes = lambda *ts: sum(t.numel() * t.element_size() for t in ts)
    if op == "gemm":
        m, n, k = d0
        a, b = rnd((m, k), dt), rnd((k, n), dt)
        ms = med(lambda: a @ b)
        return ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12, "TFLOP/s"
    if op == "attention":
        B, H, S, D = d0
        L = int(parts[1].split("x")[0]) if len(parts) > 1 else S
        hkv = int(parts[1].split("x")[1]) if len(parts) > 1 and "x" in parts[1] else H
        q, k, v = rnd((B, H, S, D), dt), rnd((B, hkv, L, D), dt), rnd((B, hkv, L, D), dt)
        causal = "causal" in flags
        ms = med(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hkv != H))
        pairs = S * L - S * (S - 1) / 2 if causal else S * L
        return ms, 4.0 * B * H * pairs * D / (ms * 1e-3) / 1e12, "TFLOP/s"
    if op == "conv2d":
        w = dims(parts[1])
        x, wt = rnd(d0, dt), rnd(w, dt)
        stride = int(flags.get("stride", "1").split("x")[0]); pad = int(flags.get("pad", "0").split("x")[0])
        y = F.conv2d(x, wt, stride=stride, padding=pad)
        ms = med(lambda: F.conv2d(x, wt, stride=stride, padding=pad))
        return ms, 2.0 * y.numel() * w[1] * w[2] * w[3] / (ms * 1e-3) / 1e12, "TFLOP/s"
    x = rnd(d0, dt)
    y = torch.empty_like(x)
    if op == "softmax":
        ms = med(lambda: torch.softmax(x, -1)); gb = nbytes(x, y)
    elif op == "layer_norm":
        g, b = rnd(d0[-1:], dt, 0.5, 1.5), rnd(d0[-1:], dt)
        ms = med(lambda: F.layer_norm(x, d0[-1:], g, b)); gb = nbytes(x, y, g, b)
    elif op == "rms_norm":
        g = rnd(d0[-1:], dt, 0.5, 1.5)
        ms = med(lambda: F.rms_norm(x, d0[-1:], g, eps=1e-6)); gb = nbytes(x, y, g)
    elif op == "rope":
        S, Hh, D = d0[-3], d0[-2], d0[-1]
        base, off = float(flags.get("base", 10000)), int(flags.get("offset", 0))
        inv = base ** (-torch.arange(0, D, 2, device="cuda").float() / D)
        pos = off + torch.arange(S, device="cuda").float()
        def rope():
            ang = pos[:, None] * inv
            cos, sin = ang.cos()[:, None, :].to(dt), ang.sin()[:, None, :].to(dt)
            a, b = x[..., : D // 2], x[..., D // 2:]
            return torch.cat((a * cos - b * sin, a * sin + b * cos), -1)
        ms = med(rope); gb = nbytes(x, y)
    elif op == "copy":
        ms = med(lambda: y.copy_(x)); gb = nbytes(x, y)
    elif op == "add":
        x2 = rnd(d0, dt)
        ms = med(lambda: torch.add(x, x2, out=y)); gb = nbytes(x, x2, y)
    else:
        f = {"relu": torch.relu, "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
             "exp": torch.exp, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[op]
        ms = med(lambda: f(x)); gb = nbytes(x, y)
    return ms, gb / 1e9 / (ms * 1e-3), "GB/s"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/model_shapes.txt"
    flt = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--filter" else ""
    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#") or (flt and flt not in line):
            continue
        name, op, dtype, shape, *opts = line.split()
        try:
            ms, rate, unit = case(name, op, dtype, shape, opts)
            print(f"RESULT {name} {op} {dtype} {ms:.4f} {rate:.2f} {unit}", flush=True)
        except Exception as e:  # one failing case must not hide the others
            print(f"ERROR {name} {op} {dtype}: {type(e).__name__}: {e}", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
