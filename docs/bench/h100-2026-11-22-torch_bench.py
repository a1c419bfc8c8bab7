# PyTorch peers of vk_bench, same shapes, CUDA events, median of 10 after 3 warm-ups.
import torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
def med(f):
    for _ in range(3): f()
    ts = []
    for _ in range(10):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
print("torch", torch.__version__, torch.cuda.get_device_name())
n = 4096
for dt, name in ((torch.float32, "f32"), (torch.float16, "f16")):
    A = torch.randn(n, n, device="cuda", dtype=dt); B = torch.randn(n, n, device="cuda", dtype=dt)
    ms = med(lambda: torch.mm(A, B))
    print(f"torch mm 4096^3 {name}: {ms:.3f} ms, {2*n**3/(ms*1e-3)/1e12:.2f} TFLOP/s")
r = 8192
x = torch.rand(r, r, device="cuda"); gb = 2 * r * r * 4 / 1e9
ms = med(lambda: torch.softmax(x, -1)); print(f"torch softmax 8192x8192 f32: {ms:.3f} ms, {gb/(ms*1e-3):.0f} GB/s (r+w)")
w = torch.ones(r, device="cuda"); bb = torch.zeros(r, device="cuda")
ms = med(lambda: torch.nn.functional.layer_norm(x, (r,), w, bb)); print(f"torch layer_norm 8192x8192 f32: {ms:.3f} ms, {gb/(ms*1e-3):.0f} GB/s (r+w)")
y = torch.empty_like(x)
ms = med(lambda: y.copy_(x)); print(f"torch device copy 256 MiB: {ms:.3f} ms, {gb/(ms*1e-3):.0f} GB/s (r+w)")
