#!/usr/bin/env python3
"""Builds the small Hugging Face checkpoints under tests/data/hf/ and what
`transformers` computes on them: the reference kforge's checkpoint tests
(tests/model_checkpoint.cpp) compare with, offline.

Run where PyTorch and transformers are installed (the GPU machine; no GPU
needed):  python3 tests/data/hf/make_reference.py OUT_DIR
Each checkpoint OUT_DIR/<name>/ is what `save_pretrained` writes (config.json,
model.safetensors or shards and their index) beside reference.safetensors:
  prompt_ids   I64 [P]         the prompts, concatenated
  prompt_lens  I64 [N]
  tokens       I64 [N, STEPS]  greedy generate, max_new_tokens = STEPS, no EOS
  logits       F32 [N, LOGIT_STEPS, V]  the raw logits of the first steps
  margins      F32 [N, STEPS]  top-1 minus top-2 logit at each step
computed in float32 on the CPU with eager attention by the model
`from_pretrained` loads from the saved directory in float32 (a bf16 or f16
checkpoint is upcast: the f32 math on the stored values).
"""
import json, os, sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import (GenerationConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

STEPS, LOGIT_STEPS, VOCAB = 64, 4, 256
PROMPT_LENS = [1, 2, 3, 5, 8, 13, 21, 40]


def models():
    common = dict(vocab_size=VOCAB, initializer_range=0.1, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    yield "llama", LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                                num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                                                rope_theta=10000.0, max_position_embeddings=256, **common)), \
        torch.float32, "150KB"
    yield "qwen2", Qwen2ForCausalLM(Qwen2Config(hidden_size=64, intermediate_size=80, num_hidden_layers=2,
                                                num_attention_heads=4, num_key_value_heads=1, rms_norm_eps=1e-6,
                                                rope_theta=1000000.0, tie_word_embeddings=True,
                                                max_position_embeddings=256, **common)), torch.bfloat16, None
    yield "mistral", MistralForCausalLM(MistralConfig(hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                                                      num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                                                      sliding_window=128, rms_norm_eps=1e-5, rope_theta=10000.0,
                                                      max_position_embeddings=256, **common)), torch.float16, None
    yield "gpt2", GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=128, **common)), \
        torch.float32, None


def main(out):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, VOCAB, (n,), generator=g) for n in PROMPT_LENS]
    for name, model, dtype, shard in models():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        model = model.to(dtype)
        kw = {"max_shard_size": shard} if shard else {}
        model.save_pretrained(d, safe_serialization=True, **kw)
        # what transformers computes for the checkpoint as saved, in f32: loaded back (an in-memory .float() of
        # the 16-bit model would keep buffers such as RoPE's inv_freq rounded to 16 bits)
        ref = type(model).from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
        gc = GenerationConfig(max_new_tokens=STEPS, min_new_tokens=STEPS, do_sample=False, eos_token_id=None,
                              pad_token_id=0, bos_token_id=None)
        tokens, logits, margins = [], [], []
        with torch.no_grad():
            for p in prompts:
                o = ref.generate(p[None], generation_config=gc, output_logits=True, return_dict_in_generate=True)
                tokens.append(o.sequences[0, len(p):])
                step_logits = torch.stack([l[0].float() for l in o.logits])  # [STEPS, V]
                logits.append(step_logits[:LOGIT_STEPS])
                top2 = step_logits.topk(2, dim=-1).values
                margins.append(top2[:, 0] - top2[:, 1])
        save_file({"prompt_ids": torch.cat(prompts).to(torch.int64),
                   "prompt_lens": torch.tensor(PROMPT_LENS, dtype=torch.int64),
                   "tokens": torch.stack(tokens).to(torch.int64).contiguous(),
                   "logits": torch.stack(logits).contiguous(),
                   "margins": torch.stack(margins).contiguous()},
                  os.path.join(d, "reference.safetensors"),
                  metadata={"transformers": transformers.__version__, "torch": torch.__version__,
                            "stored_dtype": str(dtype)})
        m = torch.stack(margins)
        print(f"{name}: {sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))} bytes, "
              f"files {sorted(os.listdir(d))}, min top-2 margin {m.min().item():.3g}, "
              f"first tokens {tokens[0][:8].tolist()}")
    print("transformers", transformers.__version__, "torch", torch.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
