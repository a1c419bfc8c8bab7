# bench/torch_gemm.py — PyTorch peers of `vk_bench --gemm-shapes`: the same
# gemm shapes (M x N x K, kforge's SHAPE order: A [M,K] @ B [K,N], B row-major),
# f32 with TF32 off (cuBLAS true fp32) and f16; and of `vk_bench --coopmat2`'s
# bf16 rows: bf16 at 4096³ and 8192³, and gelu_tanh(A @ B + bias) at 4096³;
# printed as `RESULT <case> <ms> <rate> <unit>` with the same case names. Timed as kforge's
# side is: R calls back to back between two CUDA events (R so that they run
# >= 5 ms), after 0.2 s of warm-up, median of 5. Inputs uniform in [-1, 1).
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

SHAPES = [(1, 14336, 4096), (1, 4096, 4096), (8, 4096, 4096), (16, 4096, 14336), (1, 128256, 4096),
          (512, 4096, 4096), (512, 14336, 4096), (2048, 4096, 4096), (4096, 11008, 4096), (4096, 4096, 4096),
          (8192, 8192, 8192)]


def per_call_ms(f):
    f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    est = max((time.perf_counter() - t0) * 1e3 / 3, 1e-4)
    reps = int(min(2000, max(3, 5.0 / est + 1)))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        for _ in range(reps):
            f()
        torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            f()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / reps)
    ts.sort()
    return ts[len(ts) // 2]


def result(name, ms, rate, unit):
    print(f"RESULT {name} {ms:.4f} {rate:.2f} {unit}", flush=True)


print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
x = torch.rand(8192, 8192, device="cuda")
y = torch.empty_like(x)
ms = per_call_ms(lambda: y.copy_(x))
result("copy_256MiB", ms, 2 * x.numel() * 4 / (ms * 1e-3) / 1e9, "GB/s")
del x, y
for m, n, k in SHAPES:
    for dt, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        A = torch.rand(m, k, device="cuda", dtype=dt) * 2 - 1
        B = torch.rand(k, n, device="cuda", dtype=dt) * 2 - 1
        C = torch.empty(m, n, device="cuda", dtype=dt)
        ms = per_call_ms(lambda: torch.mm(A, B, out=C))
        case = f"gemm_{name}_{m}x{n}x{k}"
        result(case, ms, 2 * m * n * k / (ms * 1e-3) / 1e12, "TFLOP/s")
        if m <= 16:
            result(case + "_B", ms, k * n * B.element_size() / (ms * 1e-3) / 1e9, "GB/s")
        del A, B, C
for m, n, k in ((4096, 4096, 4096), (8192, 8192, 8192)):
    A = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
    B = torch.rand(k, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    C = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ms = per_call_ms(lambda: torch.mm(A, B, out=C))
    result(f"gemm_bf16_{m}x{n}x{k}", ms, 2 * m * n * k / (ms * 1e-3) / 1e12, "TFLOP/s")
    if m == 4096:
        bias = torch.rand(n, device="cuda", dtype=torch.bfloat16) * 2 - 1
        ms = per_call_ms(lambda: torch.nn.functional.gelu(A @ B + bias, approximate="tanh"))
        result(f"gemm_bias_gelu_bf16_{m}x{n}x{k}", ms, 2 * m * n * k / (ms * 1e-3) / 1e12, "TFLOP/s")
    del A, B, C
