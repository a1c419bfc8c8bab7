# bench/torch_transformer.py — the PyTorch peer of `kforge transformer`: the
# same decoder (tools' presets: kforge::model::preset, include/kforge/model/
# config.hpp) in PyTorch eager, as a user writes it, timed the way
# bench/torch_timing.py times a call (1.5 s of GPU warm-up as kforge transformer, then the median
# of CUDA-event-timed calls).
#
#   python3 bench/torch_transformer.py --preset llama3-8b --dtype f16 --layers 1 --prefill 2048 --decode-cache 4096
#
# The block: RMSNorm (F.rms_norm) or LayerNorm; Q/K/V projections x @ W
# (+ b); RoPE in Hugging Face's half-split form (cos/sin tables for the
# positions, rotate_half); the new K/V rows copied into a preallocated cache
# [1, Lmax, Hkv, hd]; F.scaled_dot_product_attention over the cache's first
# pos + t rows (is_causal for a prefill from an empty cache, enable_gqa for
# grouped KV heads; PyTorch picks flash / memory-efficient / cuDNN);
# x = x + attn @ Wo (+ b); norm; gated MLP silu(x @ Wg) * (x @ Wu) from one
# [D, 2F] gemm, or GPT-2's gelu_tanh(x @ W1 + b1); x = x + h @ W2 (+ b). The
# head: the last token's row, final norm, @ lm_head [D, V]. Weights random
# (normal, σ = 1/√fan_in), TF32 off. The embedding is outside the timed step,
# as in `kforge transformer` until op::embedding lands.
#
# Prints `RESULT <preset> prefill <dtype> <ms> <tokens/s>` for a prefill of
# --prefill tokens from an empty cache and `RESULT <preset> decode <dtype>
# <ms> <tokens/s>` for one decode step at position --decode-cache (the cache
# holds that many tokens; each timed call writes the same row).
import argparse
import math

import torch

from torch_timing import med

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
F = torch.nn.functional

PRESETS = {
    "tiny": dict(hidden=72, heads=4, kv_heads=2, head_dim=16, mlp=100, vocab=97, layers=2, norm="rms", eps=1e-5,
                 gated=True, rope=True, base=10000.0, bias=False),
    "gpt2-small": dict(hidden=768, heads=12, kv_heads=12, head_dim=64, mlp=3072, vocab=50257, layers=1, norm="layer",
                       eps=1e-5, gated=False, rope=False, base=10000.0, bias=True),
    "llama3-8b": dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, mlp=14336, vocab=128256, layers=1, norm="rms",
                      eps=1e-5, gated=True, rope=True, base=500000.0, bias=False),
}


class Decoder:
    def __init__(self, c, dt, cache_rows):
        self.c, self.dt = c, dt
        dev = "cuda"
        D, H, Hk, hd, Fw = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["mlp"]

        def w(n, m):
            return (torch.randn(n, m, device=dev) / math.sqrt(n)).to(dt)

        def b(n):
            return (torch.randn(n, device=dev) * 0.05).to(dt) if c["bias"] else None

        def g(n):
            return (1 + 0.1 * torch.randn(n, device=dev)).to(dt)

        self.layers = []
        for _ in range(c["layers"]):
            self.layers.append(dict(
                n1=g(D), n1b=b(D) if c["norm"] == "layer" else None, wq=w(D, H * hd), wk=w(D, Hk * hd), wv=w(D, Hk * hd),
                wo=w(H * hd, D), bq=b(H * hd), bk=b(Hk * hd), bv=b(Hk * hd), bo=b(D), n2=g(D),
                n2b=b(D) if c["norm"] == "layer" else None, wup=w(D, 2 * Fw if c["gated"] else Fw),
                bup=b(2 * Fw if c["gated"] else Fw), wdown=w(Fw, D), bdown=b(D),
                k=torch.zeros(1, cache_rows, Hk, hd, device=dev, dtype=dt),
                v=torch.zeros(1, cache_rows, Hk, hd, device=dev, dtype=dt)))
        self.nf, self.nfb = g(D), (b(D) if c["norm"] == "layer" else None)
        self.head = w(D, c["vocab"])
        inv = 1.0 / (c["base"] ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(cache_rows, device=dev, dtype=torch.float32), inv)
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).to(dt)  # [Lmax, hd]
        self.sin = torch.cat([ang.sin(), ang.sin()], -1).to(dt)

    def norm(self, x, g, b):
        if self.c["norm"] == "rms":
            return F.rms_norm(x, (x.shape[-1],), g, self.c["eps"])
        return F.layer_norm(x, (x.shape[-1],), g, b, self.c["eps"])

    @staticmethod
    def lin(x, w, b):
        return x @ w if b is None else torch.addmm(b, x, w)

    def rope(self, x, pos):  # x [t, heads, hd]
        t, hd = x.shape[0], x.shape[-1]
        cos, sin = self.cos[pos:pos + t, None, :], self.sin[pos:pos + t, None, :]
        rot = torch.cat([-x[..., hd // 2:], x[..., :hd // 2]], -1)
        return x * cos + rot * sin

    def step(self, x, pos):  # x [t, D] hidden states; returns the last token's logits [1, V]
        c = self.c
        t, H, Hk, hd = x.shape[0], c["heads"], c["kv_heads"], c["head_dim"]
        for L in self.layers:
            h = self.norm(x, L["n1"], L["n1b"])
            q = self.lin(h, L["wq"], L["bq"]).view(t, H, hd)
            k = self.lin(h, L["wk"], L["bk"]).view(t, Hk, hd)
            v = self.lin(h, L["wv"], L["bv"]).view(t, Hk, hd)
            if c["rope"]:
                q, k = self.rope(q, pos), self.rope(k, pos)
            L["k"][0, pos:pos + t] = k
            L["v"][0, pos:pos + t] = v
            kk, vv = L["k"][:, :pos + t].transpose(1, 2), L["v"][:, :pos + t].transpose(1, 2)
            a = F.scaled_dot_product_attention(q.transpose(0, 1)[None], kk, vv, is_causal=t > 1, enable_gqa=Hk != H)
            x = x + self.lin(a[0].transpose(0, 1).reshape(t, H * hd), L["wo"], L["bo"])
            h = self.norm(x, L["n2"], L["n2b"])
            if c["gated"]:
                gu = h @ L["wup"]
                m = F.silu(gu[:, :c["mlp"]]) * gu[:, c["mlp"]:]
            else:
                m = F.gelu(self.lin(h, L["wup"], L["bup"]), approximate="tanh")
            x = x + self.lin(m, L["wdown"], L["bdown"])
        return self.norm(x[-1:], self.nf, self.nfb) @ self.head


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="llama3-8b", choices=sorted(PRESETS))
    ap.add_argument("--dtype", default="f16", choices=["f32", "f16", "bf16"])
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--decode-cache", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    c = dict(PRESETS[a.preset])
    if a.layers:
        c["layers"] = a.layers
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    torch.manual_seed(0)
    m = Decoder(c, dt, max(a.prefill, a.decode_cache + 1))
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {a.preset} x{c['layers']} {a.dtype}")
    with torch.no_grad():
        if a.prefill > 0:
            x = torch.randn(a.prefill, c["hidden"], device="cuda", dtype=dt)
            ms = med(lambda: m.step(x, 0), reps=a.reps, warm_s=1.5)
            print(f"RESULT {a.preset} prefill {a.dtype} {ms:.4f} {a.prefill / ms * 1e3:.1f}")
        if a.decode_cache > 0:
            fill = torch.randn(a.decode_cache, c["hidden"], device="cuda", dtype=dt)
            m.step(fill, 0)  # the cache holds decode_cache tokens
            x1 = torch.randn(1, c["hidden"], device="cuda", dtype=dt)
            ms = med(lambda: m.step(x1, a.decode_cache), reps=a.reps, warm_s=1.5)
            print(f"RESULT {a.preset} decode {a.dtype} {ms:.4f} {1e3 / ms:.1f}")


if __name__ == "__main__":
    main()
