#!/usr/bin/env python3
"""The activation bytes a stagecut profile gives its block.0, against an independent count: the
tensors autograd saves for the backward of Hugging Face's block of the same shape and precision
(GPT2Block or LlamaDecoderLayer, eager attention), run by PyTorch on the CPU under
torch.autograd.graph.saved_tensors_hooks, each storage once, the weights left out. Prints one
line; exit 0 when the two agree within --tolerance, 1 when not, 2 for bad input, 77 when this
Python cannot build the block (no transformers, or a profile whose attention is SDPA: the GPU
check compares that one, bench/llama_block_memory.py).

usage: block_saved_bytes.py PROFILE.json [--tolerance 0.02]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from zoo_block_reference import llama_config, read_block_profile  # noqa: E402


def hf_block(family, config, torch):
    """HF's block for the zoo's config, and the keyword arguments its forward takes."""
    seq = config["seq"]
    if family == "gpt":
        from transformers import GPT2Config
        from transformers.models.gpt2 import modeling_gpt2
        # stagecut's GPT block: exact GELU, no dropout, LayerNorm eps 1e-5.
        hf_config = GPT2Config(n_embd=config["hidden"], n_head=config["heads"], n_inner=config["ffn"],
                               n_positions=seq, vocab_size=config["vocab"], activation_function="gelu",
                               resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0, layer_norm_epsilon=1e-5)
        hf_config._attn_implementation = "eager"
        return modeling_gpt2.GPT2Block(hf_config, layer_idx=0), {}
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama
    hf_config = llama_config(config, LlamaConfig)
    hf_config._attn_implementation = "eager"
    layer = modeling_llama.LlamaDecoderLayer(hf_config, layer_idx=0)
    position_ids = torch.arange(seq).unsqueeze(0)
    mask = torch.full((seq, seq), float("-inf")).triu(1)[None, None]
    arguments = {"attention_mask": mask, "position_ids": position_ids}
    if hasattr(modeling_llama, "LlamaRotaryEmbedding") and "position_embeddings" in \
            modeling_llama.LlamaDecoderLayer.forward.__code__.co_varnames:
        # transformers 4.45+: the model makes cos and sin and hands them to every layer.
        rotary = modeling_llama.LlamaRotaryEmbedding(config=hf_config)
        with torch.no_grad():
            arguments["position_embeddings"] = rotary(torch.zeros(1, seq, config["hidden"]), position_ids)
    return layer, arguments


def main():
    args, profile = read_block_profile("block_saved_bytes", __doc__.splitlines()[0])
    family, config, block = profile.family, profile.config, profile.block
    microbatch, dtype_name = profile.microbatch, profile.dtype_name
    if family not in ("gpt", "llama"):
        print(f"block_saved_bytes: {args.profile}: a {family} profile; gpt and llama have HF blocks", file=sys.stderr)
        return 2
    if config.get("attention") == "sdpa":
        print(f"block_saved_bytes: skipped: {args.profile}'s attention is SDPA (LibTorch 2.x); "
              "bench/llama_block_memory.py compares it on the GPU", file=sys.stderr)
        return 77
    try:
        import torch
        layer, arguments = hf_block(family, config, torch)
    except ImportError as error:
        print(f"block_saved_bytes: skipped: {error}", file=sys.stderr)
        return 77
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype_name]
    layer = layer.to(dtype=dtype).eval()
    arguments = {key: (value.to(dtype) if torch.is_tensor(value) and value.is_floating_point() else value)
                 for key, value in arguments.items()}
    if "position_embeddings" in arguments:
        arguments["position_embeddings"] = tuple(t.to(dtype) for t in arguments["position_embeddings"])
    weights = {parameter.storage().data_ptr() for parameter in layer.parameters()}
    saved = {}

    def pack(tensor):
        storage = tensor.storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    leaf = torch.randn(microbatch, config["seq"], config["hidden"], dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        layer(leaf.clone(), **arguments)
    counted = sum(saved.values())
    stagecut_kept = block["activation_bytes"]
    difference = stagecut_kept / counted - 1 if counted > 0 else float("inf")
    print(f"block.0 of a {family} ({dtype_name}, microbatch {microbatch}, seq {config['seq']}, eager attention): "
          f"stagecut {stagecut_kept} bytes kept, {type(layer).__name__}'s saved tensors {counted} bytes "
          f"({len(saved)} storages): {difference:+.2%}")
    return 0 if abs(difference) <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
