#!/usr/bin/env python3
"""The activation bytes of a llama profile's block.0 against Hugging Face's LlamaDecoderLayer of
the same shape, run by PyTorch itself on the GPU (scripts/gpu-check.sh runs it on the machine's own
python): what the block keeps for its backward, counted by torch.cuda.memory_allocated as
stagecut's profiler counts it (docs/profiler.md): the block gets a copy of a leaf input, and what
is alive after its forward, less its output, is what it keeps. The rotary cos and sin are inputs
of HF's layer but made inside stagecut's block, so stagecut's count is larger by up to the two of
them. Prints one line per figure; exit 0 when the two agree within --tolerance, 1 when not, 2 for
bad input, 77 when there is no GPU or no transformers.

usage: llama_block_memory.py PROFILE.json [--tolerance 0.02]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from zoo_block_reference import llama_config, read_block_profile  # noqa: E402


def main():
    args, profile = read_block_profile("llama_block_memory", __doc__.splitlines()[0])
    config, block, microbatch, dtype_name = profile.config, profile.block, profile.microbatch, profile.dtype_name
    try:
        import torch
        from transformers import LlamaConfig
        from transformers.models.llama import modeling_llama
    except ImportError as error:
        print(f"llama_block_memory: skipped: {error}", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("llama_block_memory: skipped: no GPU (torch.cuda.memory_allocated counts only CUDA memory)", file=sys.stderr)
        return 77
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype_name]
    hf_config = llama_config(config, LlamaConfig)
    hf_config._attn_implementation = "sdpa" if config.get("attention") == "sdpa" else "eager"
    device = torch.device("cuda")
    layer = modeling_llama.LlamaDecoderLayer(hf_config, layer_idx=0).to(device=device, dtype=dtype)
    seq = config["seq"]
    leaf = torch.randn(microbatch, seq, config["hidden"], device=device, dtype=dtype, requires_grad=True)
    position_ids = torch.arange(seq, device=device).unsqueeze(0)
    rotary = modeling_llama.LlamaRotaryEmbedding(config=hf_config).to(device)
    with torch.no_grad():
        cos, sin = rotary(leaf, position_ids)
    mask = None
    if hf_config._attn_implementation == "eager":
        mask = torch.full((seq, seq), float("-inf"), device=device, dtype=dtype).triu(1)[None, None]
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    copy = leaf.clone()
    output = layer(copy, attention_mask=mask, position_ids=position_ids, position_embeddings=(cos, sin))
    output = output[0] if isinstance(output, tuple) else output
    del copy
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated() - before - output.numel() * output.element_size()
    stagecut_kept = block["activation_bytes"]
    # What the two forms keep differently, by construction: stagecut's block makes the rotary cos
    # and sin itself (HF's layer is handed them), and repeats k and v to every query head before
    # the attention, as torchtitan's repeat_kv does; recent transformers pass SDPA enable_gqa
    # instead (PyTorch 2.5+), which keeps k and v at the KV heads.
    rope_bytes = 2 * cos.numel() * cos.element_size()
    native_gqa = False
    try:
        from transformers.integrations.sdpa_attention import use_gqa_in_sdpa
        probe = torch.empty(1, config["kv_heads"], 1, config["hidden"] // config["heads"], device=device)
        try:
            uses_gqa = use_gqa_in_sdpa(None, probe, probe)  # transformers 5: (mask, key, value)
        except TypeError:
            uses_gqa = use_gqa_in_sdpa(None, probe)  # 4.4x: (mask, key)
        native_gqa = hf_config._attn_implementation == "sdpa" and bool(uses_gqa)
    except ImportError:
        pass
    head_dim = config["hidden"] // config["heads"]
    element = torch.empty(0, dtype=dtype).element_size()
    repeat_bytes = 2 * microbatch * seq * (config["heads"] - config["kv_heads"]) * head_dim * element if native_gqa else 0
    expected = kept + rope_bytes + repeat_bytes
    difference = stagecut_kept / expected - 1 if expected > 0 else float("inf")
    print(f"block.0 of {profile.name} ({dtype_name}, microbatch {microbatch}, seq {seq}, "
          f"{hf_config._attn_implementation} attention): stagecut {stagecut_kept / 1e6:.1f} MB kept, "
          f"HF LlamaDecoderLayer {kept / 1e6:.1f} MB by torch.cuda.memory_allocated, "
          f"+ {rope_bytes / 1e6:.1f} MB of rotary cos and sin"
          + (f" + {repeat_bytes / 1e6:.1f} MB of k and v repeated to every head (HF keeps them at the KV heads: "
             "SDPA's enable_gqa)" if native_gqa else "")
          + f" = {expected / 1e6:.1f} MB: {difference:+.2%}")
    return 0 if abs(difference) <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
