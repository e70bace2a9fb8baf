"""What the scripts that hold a zoo profile's block.0 to PyTorch's own count share
(bench/llama_block_memory.py on the GPU, tests/block_saved_bytes.py on the CPU): reading the
profile, and Hugging Face's LLaMA config of the same shape."""
import argparse
import json
import sys


class BlockProfile:
    """A gpt or llama zoo profile's block.0 and what its shape and precision are."""

    def __init__(self, path):
        profile = json.load(open(path))
        self.path = path
        self.name = profile["model"].get("name", "?")
        self.family = profile["model"]["source"].split(":", 1)[1]
        self.config = profile["model"]["config"]
        self.block = next(layer for layer in profile["layers"] if layer["name"] == "block.0")
        self.microbatch = profile["run"]["microbatch_size"]
        self.dtype_name = profile["run"].get("dtype", "float32")


def read_block_profile(script, description):
    """The command line (PROFILE [--tolerance T]) and its profile; exits 2 naming `script` when
    the file is no zoo profile with a block.0."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("profile")
    parser.add_argument("--tolerance", type=float, default=0.02)
    args = parser.parse_args()
    try:
        return args, BlockProfile(args.profile)
    except (OSError, ValueError, KeyError, IndexError, StopIteration) as error:
        print(f"{script}: {args.profile}: not a zoo profile with a block.0 ({error})", file=sys.stderr)
        sys.exit(2)


def llama_config(config, LlamaConfig):
    """Hugging Face's LlamaConfig of a llama zoo model's config (one layer)."""
    return LlamaConfig(hidden_size=config["hidden"], intermediate_size=config["ffn"],
                       num_attention_heads=config["heads"], num_key_value_heads=config["kv_heads"],
                       rope_theta=config["rope_theta"], rms_norm_eps=config["norm_eps"],
                       max_position_embeddings=config["seq"], vocab_size=config["vocab"],
                       attention_bias=bool(config.get("qkv_bias", False)), num_hidden_layers=1)
