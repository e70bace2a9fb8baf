"""The zoo's llama chain against Hugging Face's own model with the same weights.

Usage: llama_reference.py TENSORS CONFIG
  TENSORS  what tests/profiler_zoo_llama_test.cpp saved with torch::pickle_save: the chain's
           weights under Hugging Face's names, "input_ids" and the chain's "logits" for them
  CONFIG   the chain's model.config (layers, hidden, heads, kv_heads, ffn, seq, vocab,
           rope_theta, norm_eps, qkv_bias)
Builds LlamaForCausalLM (Qwen2ForCausalLM where q, k and v have biases) with eager attention,
loads the weights (every one, no more, no fewer), runs the input and prints one line:
"<model>: max abs diff <d> of logits [..] (...)". Exit 0 when the difference is at most 1e-5,
1 otherwise.
"""
import json
import sys

import torch
import transformers

TOLERANCE = 1e-5

tensors = torch.load(sys.argv[1])
with open(sys.argv[2]) as file:
    config = json.load(file)
common = dict(vocab_size=config["vocab"], hidden_size=config["hidden"], intermediate_size=config["ffn"],
              num_hidden_layers=config["layers"], num_attention_heads=config["heads"],
              num_key_value_heads=config["kv_heads"], max_position_embeddings=config["seq"],
              rms_norm_eps=config["norm_eps"], rope_theta=config["rope_theta"], tie_word_embeddings=False,
              use_cache=False)
if config["qkv_bias"]:
    # Qwen2: biases on q, k and v only (LlamaConfig's attention_bias would add one to o too).
    hf_config = transformers.Qwen2Config(use_sliding_window=False, **common)
    model_class = transformers.Qwen2ForCausalLM
else:
    hf_config = transformers.LlamaConfig(attention_bias=False, **common)
    model_class = transformers.LlamaForCausalLM
hf_config._attn_implementation = "eager"
model = model_class(hf_config).eval()
input_ids, want = tensors.pop("input_ids"), tensors.pop("logits")
model.load_state_dict(tensors, strict=True)
with torch.no_grad():
    got = model(input_ids).logits
if got.shape != want.shape:
    print(f"{model_class.__name__}: logits {list(got.shape)}, the chain's {list(want.shape)}")
    sys.exit(1)
diff = float((got - want).abs().max())
print(f"{model_class.__name__}: max abs diff {diff:.3g} of logits {list(got.shape)} "
      f"(transformers {transformers.__version__}, torch {torch.__version__})")
sys.exit(0 if diff <= TOLERANCE else 1)
