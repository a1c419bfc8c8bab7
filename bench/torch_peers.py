# bench/torch_peers.py — PyTorch peers of bench/vk_bench.cpp: the same cases and
# shapes, printed as `RESULT <case> <ms> <rate> <unit>`. CUDA events, median of
# 10 after 0.25 s of warm-up (bench/torch_timing.py); TF32 off (cuBLAS true fp32); random inputs.
import torch

from torch_timing import med

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
F = torch.nn.functional




def result(name, ms, rate, unit):
    print(f"RESULT {name} {ms:.4f} {rate:.2f} {unit}", flush=True)


print("torch", torch.__version__, torch.cuda.get_device_name())
for dt, name in ((torch.float32, "f32"), (torch.float16, "f16")):
    for n in (1024, 2048, 4096, 8192):
        A = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        B = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        ms = med(lambda: torch.mm(A, B))
        result(f"gemm_{name}_{n}", ms, 2 * n**3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    n = 4096
    A = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
    B = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
    bias = torch.rand(n, device="cuda", dtype=dt) * 2 - 1
    ms = med(lambda: F.gelu(A @ B + bias, approximate="tanh"))
    result(f"gemm_bias_gelu_{name}_{n}", ms, 2 * n**3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    del A, B
# bf16, the dtype models ship in (vk_bench's bf16 rows: 4096 and 8192, bias + gelu_tanh at 4096).
dt = torch.bfloat16
for n in (4096, 8192):
    A = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
    B = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
    ms = med(lambda: torch.mm(A, B))
    result(f"gemm_bf16_{n}", ms, 2 * n**3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    if n == 4096:
        bias = torch.rand(n, device="cuda", dtype=dt) * 2 - 1
        ms = med(lambda: F.gelu(A @ B + bias, approximate="tanh"))
        result(f"gemm_bias_gelu_bf16_{n}", ms, 2 * n**3 / (ms * 1e-3) / 1e12, "TFLOP/s")
    del A, B

r = 8192
x = torch.rand(r, r, device="cuda") * 8 - 4
x2 = x.clone()
y = torch.empty_like(x)
gb2, gb3 = 2 * r * r * 4 / 1e9, 3 * r * r * 4 / 1e9
ms = med(lambda: y.copy_(x)); result("copy_256MiB", ms, gb2 / (ms * 1e-3), "GB/s")
ms = med(lambda: torch.relu(x)); result("relu_8192x8192_f32", ms, gb2 / (ms * 1e-3), "GB/s")
ms = med(lambda: F.gelu(x, approximate="tanh")); result("gelu_8192x8192_f32", ms, gb2 / (ms * 1e-3), "GB/s")
ms = med(lambda: torch.add(x, x2, out=y)); result("add_8192x8192_f32", ms, gb3 / (ms * 1e-3), "GB/s")
ms = med(lambda: torch.softmax(x, -1)); result("softmax_8192x8192_f32", ms, gb2 / (ms * 1e-3), "GB/s")
w = torch.rand(r, device="cuda") + 0.5; bb = torch.rand(r, device="cuda") * 2 - 1
ms = med(lambda: F.layer_norm(x, (r,), w, bb)); result("layer_norm_8192x8192_f32", ms, gb2 / (ms * 1e-3), "GB/s")
del x, x2, y

B, H, S, D = 8, 16, 2048, 64
q, k, v = (torch.rand(B, H, S, D, device="cuda", dtype=torch.float16) * 2 - 1 for _ in range(3))
ms = med(lambda: F.scaled_dot_product_attention(q, k, v))
result("attention_b8h16s2048d64_f16", ms, 4 * B * H * S * S * D / (ms * 1e-3) / 1e12, "TFLOP/s")

# 100 small dependent element-wise ops (4096 f32), replayed as one CUDA graph.
a = torch.rand(4096, device="cuda"); b = torch.empty_like(a)
def chain():
    for _ in range(50):
        torch.neg(a, out=b); torch.neg(b, out=a)
chain(); torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    chain()
ms = med(lambda: g.replay(), reps=20)
result("replay_100_small_dispatches_per_dispatch_us", ms / 100, ms * 1e3 / 100, "us/dispatch")
