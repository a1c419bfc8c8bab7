# bench/torch_attention.py — PyTorch peers of `vk_bench --attention`: the same
# f16 attention cases through F.scaled_dot_product_attention (whichever
# backend SDPA picks; enable_gqa for grouped KV heads), printed as
# `RESULT <case> <ms> <rate> <unit>`. CUDA events, median of 10 after
# 0.25 s of warm-up (bench/torch_timing.py); random inputs in [-1, 1).
import torch

from torch_timing import med

F = torch.nn.functional




print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
cases = [  # name, B, H, Hkv, S, L, D, causal
    ("attention_f16_causal_b1h32s4096d64", 1, 32, 32, 4096, 4096, 64, True),
    ("attention_f16_causal_b1h32kv8s4096d64", 1, 32, 8, 4096, 4096, 64, True),
    ("attention_f16_causal_b1h32s4096d128", 1, 32, 32, 4096, 4096, 128, True),
    ("attention_f16_causal_b1h32kv8s4096d128", 1, 32, 8, 4096, 4096, 128, True),
    ("attention_f16_decode_b1h32kv8l4096d128", 1, 32, 8, 1, 4096, 128, False),
    ("attention_f16_decode_b1h32kv8l32768d128", 1, 32, 8, 1, 32768, 128, False),
    ("attention_f16_b8h16s2048d64", 8, 16, 16, 2048, 2048, 64, False),
]
for name, B, H, HK, S, L, D, causal in cases:
    q = torch.rand(B, H, S, D, device="cuda", dtype=torch.float16) * 2 - 1
    k, v = (torch.rand(B, HK, L, D, device="cuda", dtype=torch.float16) * 2 - 1 for _ in range(2))
    ms = med(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=HK != H))
    if S == 1:
        print(f"RESULT {name} {ms:.4f} {2 * 2 * B * HK * L * D / (ms * 1e-3) / 1e9:.2f} GB/s", flush=True)
    else:
        pairs = S * (S + 1) / 2 if causal else S * L
        print(f"RESULT {name} {ms:.4f} {4 * B * H * pairs * D / (ms * 1e-3) / 1e12:.2f} TFLOP/s", flush=True)
