#!/usr/bin/env python3
"""Exports a model as a TorchScript chain that `stagecut profile --torchscript` takes as it is.

    python3 tools/stagecut_export.py SOURCE -o OUT.pt [--input SPEC] [--layers K] [--seed N]

SOURCE is one of
    torchvision:NAME          a torchvision classifier (vgg16, resnet50, mobilenet_v3_large, ...)
    hf:NAME                   a Hugging Face decoder whose config this script knows (gpt2, llama3-8b, ...)
    hf:path/config.json       a Hugging Face decoder from its config file (GPT-2, LLaMA, Qwen2, Mistral)
    module:path/file.py:fn    fn() returns an nn.Module: an nn.Sequential, or one whose forward calls
                              its children in order on one tensor

Weights are drawn at random from --seed: timing a model does not need its trained weights, and
nothing is downloaded. The chain's children are the model's natural blocks, in order; their names
and kinds (and the model's own module paths) travel in the file as `stagecut.json`, which
stagecut reads, so the profile's layers are called `features.0` or `block.3` as in the model. The
chain's output is checked against the model's before the file is written (at the export batch
and at one more row, so no layer is specialised to the batch size).

Run with the torch whose LibTorch stagecut was built against (stagecut --version names it):
a file saved by a newer torch may not load into an older LibTorch.
"""

import argparse
import collections
import importlib.util
import inspect
import json
import math
import os
import sys
import time
import warnings

PROGRAM = "stagecut_export"
FORMAT_VERSION = 1


class InputError(Exception):
    """Bad usage or input: exit 2."""


def fail(message, code):
    print(f"{PROGRAM}: {message}", file=sys.stderr)
    sys.exit(code)


def first_line(error):
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].strip()


try:
    import torch
    from torch import nn
except ImportError as missing:  # one line, as every other error
    fail(f"needs PyTorch ({first_line(missing)}); install it: pip install torch, or apt-get install python3-torch", 2)


# --- the sample input -------------------------------------------------------------------------

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "int32": torch.int32}


class InputSpec:
    """stagecut's --input form: 8x3x224x224:float32, or 4x256:int64:0..50257."""

    def __init__(self, text):
        parts = text.split(":")
        advice = "write it as 8x3x224x224:float32 or 4x256:int64:0..50257"
        if len(parts) not in (2, 3):
            raise InputError(f"--input {text}: not SHAPE:DTYPE[:LOW..HIGH]; {advice}")
        try:
            self.shape = [int(d) for d in parts[0].split("x")]
        except ValueError:
            raise InputError(f"--input {text}: the shape {parts[0]} is not numbers joined by x; {advice}") from None
        if not self.shape or any(d <= 0 for d in self.shape):
            raise InputError(f"--input {text}: every dimension must be positive; {advice}")
        self.dtype = parts[1]
        if self.dtype not in DTYPES:
            raise InputError(f"--input {text}: unknown dtype {self.dtype}; use one of {', '.join(DTYPES)}")
        self.low, self.high = 0, 0
        if len(parts) == 3:
            bounds = parts[2].split("..")
            try:
                self.low, self.high = int(bounds[0]), int(bounds[1])
            except (ValueError, IndexError):
                raise InputError(f"--input {text}: the range {parts[2]} is not LOW..HIGH; {advice}") from None
            if self.high <= self.low:
                raise InputError(f"--input {text}: the range {parts[2]} is empty; give LOW..HIGH with LOW < HIGH")
        if self.dtype.startswith("int") and self.high <= self.low:
            raise InputError(f"--input {text}: an integer input needs its range, e.g. {parts[0]}:{self.dtype}:0..1000")

    def __str__(self):
        text = "x".join(str(d) for d in self.shape) + ":" + self.dtype
        return text + (f":{self.low}..{self.high}" if self.high > self.low else "")

    def sample(self, rows, seed):
        generator = torch.Generator().manual_seed(seed)
        shape = [rows] + self.shape[1:]
        if self.dtype.startswith("int"):
            return torch.randint(self.low, self.high, shape, generator=generator, dtype=DTYPES[self.dtype])
        return torch.randn(shape, generator=generator, dtype=DTYPES[self.dtype])


# --- layers the models' forwards add between their children ------------------------------------

class Flatten(nn.Module):
    """torch.flatten(x, 1), as the classifiers' forwards call it."""

    def forward(self, x):
        return torch.flatten(x, 1)


class SpatialMean(nn.Module):
    """x.mean([2, 3]), ShuffleNet's and MNASNet's pooling."""

    def forward(self, x):
        return x.mean([2, 3])


class Layer:
    def __init__(self, name, module, kind=None, fqn=None, inserted=False):
        self.name = name
        self.module = module
        self.kind = kind or type(module).__name__
        self.fqn = fqn if fqn is not None else name
        self.inserted = inserted  # not a child of the model: the model's forward does this inline


def flatten_sequential(prefix, module, keep_nested):
    """The children of `module`, with plain nn.Sequential ones opened up (subclasses of
    Sequential, such as torchvision's Conv2dNormActivation, are blocks and stay whole)."""
    layers = []
    for name, child in module.named_children():
        path = f"{prefix}.{name}" if prefix else name
        if type(child) is nn.Sequential and not keep_nested:
            layers.extend(flatten_sequential(path, child, keep_nested))
        else:
            layers.append(Layer(path, child))
    return layers


def part(model, path, keep_nested):
    """One named part of a model: its layers if it is a plain Sequential, itself otherwise."""
    child = model.get_submodule(path) if hasattr(model, "get_submodule") else getattr(model, path)
    if type(child) is nn.Sequential and not keep_nested:
        return flatten_sequential(path, child, keep_nested)
    return [Layer(path, child)]


# --- torchvision ------------------------------------------------------------------------------

def inserted(name, module):
    return [Layer(name, module, inserted=True)]


# Each family's forward, as the chain of its parts; the check against the model's output proves
# each recipe.
TORCHVISION_RECIPES = {
    "VGG": lambda m, k: part(m, "features", k) + part(m, "avgpool", k) + inserted("flatten", Flatten())
    + part(m, "classifier", k),
    "AlexNet": lambda m, k: part(m, "features", k) + part(m, "avgpool", k) + inserted("flatten", Flatten())
    + part(m, "classifier", k),
    "ResNet": lambda m, k: sum((part(m, p, k) for p in ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2",
                                                           "layer3", "layer4", "avgpool")), [])
    + inserted("flatten", Flatten()) + part(m, "fc", k),
    "MobileNetV2": lambda m, k: part(m, "features", k) + inserted("avgpool", nn.AdaptiveAvgPool2d((1, 1)))
    + inserted("flatten", Flatten()) + part(m, "classifier", k),
    "MobileNetV3": lambda m, k: part(m, "features", k) + part(m, "avgpool", k) + inserted("flatten", Flatten())
    + part(m, "classifier", k),
    "EfficientNet": lambda m, k: part(m, "features", k) + part(m, "avgpool", k) + inserted("flatten", Flatten())
    + part(m, "classifier", k),
    "DenseNet": lambda m, k: part(m, "features", k) + inserted("relu", nn.ReLU())
    + inserted("avgpool", nn.AdaptiveAvgPool2d((1, 1))) + inserted("flatten", Flatten()) + part(m, "classifier", k),
    "SqueezeNet": lambda m, k: part(m, "features", k) + part(m, "classifier", k) + inserted("flatten", Flatten()),
    "ConvNeXt": lambda m, k: part(m, "features", k) + part(m, "avgpool", k) + part(m, "classifier", k),
    "RegNet": lambda m, k: part(m, "stem", k) + part(m, "trunk_output", k) + part(m, "avgpool", k)
    + inserted("flatten", Flatten()) + part(m, "fc", k),
    "ShuffleNetV2": lambda m, k: sum((part(m, p, k) for p in ("conv1", "maxpool", "stage2", "stage3", "stage4",
                                                                 "conv5")), [])
    + inserted("mean", SpatialMean()) + part(m, "fc", k),
    "MNASNet": lambda m, k: part(m, "layers", k) + inserted("mean", SpatialMean()) + part(m, "classifier", k),
}


def torchvision_source(name, args):
    try:
        import torchvision
    except ImportError as missing:
        raise InputError(f"torchvision:{name}: needs torchvision ({first_line(missing)}); install it: pip install "
                         "torchvision, or apt-get install python3-torchvision") from None
    builder = getattr(torchvision.models, name, None)
    if builder is None or not callable(builder) or name.startswith("_") or name[0].isupper():
        known = sorted(n for n in dir(torchvision.models) if n[0].islower() and not n.startswith("_")
                       and callable(getattr(torchvision.models, n)) and n not in ("get_model", "get_weight",
                                                                                  "get_model_weights", "list_models"))
        raise InputError(f"torchvision:{name}: torchvision {torchvision.__version__} has no model {name}; "
                         f"e.g. {', '.join(n for n in known if n in ('vgg16', 'resnet50', 'mobilenet_v3_large', 'efficientnet_b0', 'densenet121'))}")
    try:
        model = builder(weights=None)
    except TypeError:  # torchvision before 0.13 spells it pretrained=False
        model = builder(pretrained=False)
    family = type(model).__name__
    recipe = TORCHVISION_RECIPES.get(family)
    if recipe is None:
        raise InputError(f"torchvision:{name}: a {family}'s forward is not a chain of its children (stagecut "
                         f"exports {', '.join(sorted(TORCHVISION_RECIPES))}); export a chain of your own with "
                         "module:file.py:function")
    spec = InputSpec(args.input) if args.input else InputSpec("8x3x224x224:float32")
    return model, recipe(model, args.keep_nested), spec, {"torchvision": torchvision.__version__}


# --- Hugging Face decoders ----------------------------------------------------------------------

# Published shapes of common decoders, so that nothing is downloaded. Keys are transformers'
# config arguments.
HF_KNOWN = {
    "gpt2": ("gpt2", dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)),
    "gpt2-medium": ("gpt2", dict(n_layer=24, n_embd=1024, n_head=16, vocab_size=50257, n_positions=1024)),
    "gpt2-large": ("gpt2", dict(n_layer=36, n_embd=1280, n_head=20, vocab_size=50257, n_positions=1024)),
    "gpt2-xl": ("gpt2", dict(n_layer=48, n_embd=1600, n_head=25, vocab_size=50257, n_positions=1024)),
    "llama2-7b": ("llama", dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                                max_position_embeddings=4096)),
    "llama3-8b": ("llama", dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                                max_position_embeddings=8192, rope_theta=500000.0)),
    "tinyllama-1.1b": ("llama", dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                                     num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                                     max_position_embeddings=2048)),
    "mistral-7b": ("mistral", dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                   num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                                   max_position_embeddings=32768, sliding_window=4096)),
    "qwen2-0.5b": ("qwen2", dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                 num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                                 max_position_embeddings=32768, rope_theta=1000000.0)),
    "qwen2.5-1.5b": ("qwen2", dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                   num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                                   max_position_embeddings=32768, rope_theta=1000000.0)),
}


class GPT2Embedding(nn.Module):
    """Token plus position embeddings, as GPT2Model's forward adds them."""

    def __init__(self, transformer):
        super().__init__()
        self.wte, self.wpe, self.drop = transformer.wte, transformer.wpe, transformer.drop

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        return self.drop(self.wte(ids) + self.wpe(positions))


class TokenEmbedding(nn.Module):
    def __init__(self, embed_tokens):
        super().__init__()
        self.embed_tokens = embed_tokens

    def forward(self, ids):
        return self.embed_tokens(ids)


class DecoderBlock(nn.Module):
    """One decoder layer called with what its model's forward gives it: a causal mask and, for
    rotary models, the positions (or, in newer transformers, their cos/sin)."""

    def __init__(self, layer, rotary, causal_mask):
        super().__init__()
        self.layer = layer
        self.rotary = rotary
        self.causal_mask = causal_mask
        self.accepts = set(inspect.signature(layer.forward).parameters)

    def forward(self, x):
        batch, seq = x.shape[0], x.shape[1]
        kwargs = {}
        if self.causal_mask:
            blocked = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
            mask = torch.zeros(seq, seq, dtype=x.dtype, device=x.device).masked_fill(blocked, torch.finfo(x.dtype).min)
            kwargs["attention_mask"] = mask[None, None].expand(batch, 1, seq, seq)
        positions = torch.arange(seq, device=x.device).unsqueeze(0).expand(batch, seq)
        if "position_ids" in self.accepts:
            kwargs["position_ids"] = positions
        if "position_embeddings" in self.accepts and self.rotary is not None:
            kwargs["position_embeddings"] = self.rotary(x, positions)
        if "cache_position" in self.accepts:
            kwargs["cache_position"] = torch.arange(seq, device=x.device)
        if "use_cache" in self.accepts:
            kwargs["use_cache"] = False
        out = self.layer(x, **kwargs)
        return out[0] if isinstance(out, (tuple, list)) else out


class LMHead(nn.Module):
    """Final norm and the vocabulary projection."""

    def __init__(self, norm, lm_head):
        super().__init__()
        self.norm, self.lm_head = norm, lm_head

    def forward(self, x):
        return self.lm_head(self.norm(x))


class NextTokenLoss(nn.Module):
    """Cross-entropy of the logits against labels fixed by position. Timing does not depend on
    the labels, and labels that depend on the position only keep a microbatch's loss the same
    wherever its rows sit in the batch, as validate's full-batch gradient check needs."""

    def forward(self, logits):
        vocab = logits.size(-1)
        labels = (torch.arange(logits.size(1), device=logits.device) * 7919 + 1) % vocab
        return nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.repeat(logits.size(0)))


def hf_config(spec):
    try:
        import transformers
    except ImportError as missing:
        raise InputError(f"hf:{spec}: needs transformers ({first_line(missing)}); install it: pip install "
                         "transformers") from None
    transformers.logging.set_verbosity_error()
    if spec.endswith(".json") or os.path.sep in spec:
        try:
            with open(spec) as file:
                values = json.load(file)
        except OSError as error:
            raise InputError(f"hf:{spec}: cannot be read ({error.strerror}); give a config.json") from None
        except ValueError as error:
            raise InputError(f"hf:{spec}: not JSON ({first_line(error)}); give a transformers config.json") from None
        model_type = values.pop("model_type", None) if isinstance(values, dict) else None
        if not model_type:
            raise InputError(f"hf:{spec}: has no model_type; give a transformers config.json")
    elif spec in HF_KNOWN:
        model_type, values = HF_KNOWN[spec][0], dict(HF_KNOWN[spec][1])
    else:
        raise InputError(f"hf:{spec}: not a config this exporter knows ({', '.join(HF_KNOWN)}); give "
                         "hf:path/config.json for another")
    try:
        config = transformers.AutoConfig.for_model(model_type, **values)
    except (ValueError, KeyError) as error:
        raise InputError(f"hf:{spec}: transformers {transformers.__version__} cannot build a {model_type} config "
                         f"({first_line(error)})") from None
    return transformers, config


def hf_source(spec, args):
    transformers, config = hf_config(spec)
    if args.layers is not None:
        for key in ("num_hidden_layers", "n_layer"):
            if hasattr(config, key):
                setattr(config, key, args.layers)
    # Untied: embedding and head land on different stages, and a pipeline keeps a copy of a
    # tied weight on each (Megatron all-reduces the two copies' gradients).
    config.tie_word_embeddings = False
    config.use_cache = False
    try:
        model = transformers.AutoModelForCausalLM.from_config(config)
    except (ValueError, KeyError) as error:
        raise InputError(f"hf:{spec}: transformers {transformers.__version__} has no causal LM for "
                         f"{config.model_type} ({first_line(error)})") from None
    vocab = config.vocab_size
    if config.model_type == "gpt2":
        transformer = model.transformer
        layers = [Layer("embed", GPT2Embedding(transformer), "Embedding", "transformer.wte+wpe")]
        blocks, block_path = transformer.h, "transformer.h"
        rotary, causal_mask = None, False  # GPT-2's attention applies its causal mask itself
        head = Layer("head", LMHead(transformer.ln_f, model.lm_head), "LMHead", "transformer.ln_f+lm_head")
    elif hasattr(model, "model") and all(hasattr(model.model, a) for a in ("embed_tokens", "layers", "norm")):
        decoder = model.model
        layers = [Layer("embed", TokenEmbedding(decoder.embed_tokens), "Embedding", "model.embed_tokens")]
        blocks, block_path = decoder.layers, "model.layers"
        rotary, causal_mask = getattr(decoder, "rotary_emb", None), True
        head = Layer("head", LMHead(decoder.norm, model.lm_head), "LMHead", "model.norm+lm_head")
    else:
        raise InputError(f"hf:{spec}: a {config.model_type} model is not laid out as GPT-2 or LLaMA (embedding, "
                         "blocks, final norm, head); export it with module:file.py:function")
    for i, block in enumerate(blocks):
        layers.append(Layer(f"block.{i}", DecoderBlock(block, rotary, causal_mask), "TransformerBlock",
                            f"{block_path}.{i}"))
    layers.append(head)
    max_positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    spec_input = InputSpec(args.input) if args.input else InputSpec(f"4x{min(256, max_positions or 256)}:int64:0..{vocab}")
    if spec_input.dtype != "int64" or len(spec_input.shape) != 2:
        raise InputError(f"--input {spec_input}: a decoder takes token ids, BATCHxSEQ:int64:0..{vocab}")
    if spec_input.high > vocab or spec_input.low < 0:
        raise InputError(f"--input {spec_input}: token ids must lie in 0..{vocab} (the vocabulary)")
    if max_positions and spec_input.shape[1] > max_positions:
        raise InputError(f"--input {spec_input}: {spec_input.shape[1]} tokens exceed the model's "
                         f"{max_positions} positions")
    reference = lambda ids: model(ids).logits  # noqa: E731
    loss = Layer("loss", NextTokenLoss(), "CrossEntropyLoss", "loss", inserted=True)
    return model, layers, spec_input, {"transformers": transformers.__version__}, reference, loss


# --- a user's module ----------------------------------------------------------------------------

def module_source(spec, args):
    path, sep, function = spec.rpartition(":")
    if not sep or not path or not function:
        raise InputError(f"module:{spec}: write module:path/to/file.py:function")
    if not os.path.isfile(path):
        raise InputError(f"module:{spec}: {path} is not a file; give the Python file that defines {function}")
    if not args.input:
        raise InputError(f"module:{spec}: give the model's --input, e.g. --input 8x3x224x224:float32")
    loader = importlib.util.spec_from_file_location("stagecut_user_module", path)
    user = importlib.util.module_from_spec(loader)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        loader.loader.exec_module(user)
    except Exception as error:  # the user's file: any error is theirs, in one line
        raise InputError(f"module:{spec}: {path} fails to import ({type(error).__name__}: {first_line(error)})") from None
    factory = getattr(user, function, None)
    if not callable(factory):
        raise InputError(f"module:{spec}: {path} defines no function {function}")
    try:
        model = factory()
    except Exception as error:
        raise InputError(f"module:{spec}: {function}() fails ({type(error).__name__}: {first_line(error)})") from None
    if not isinstance(model, nn.Module):
        raise InputError(f"module:{spec}: {function}() returns {type(model).__name__}, not an nn.Module")
    layers = flatten_sequential("", model, args.keep_nested)
    if not layers:
        raise InputError(f"module:{spec}: the module has no children to use as layers; return an nn.Sequential")
    return model, layers, InputSpec(args.input), {}


# --- the chain ----------------------------------------------------------------------------------

def child_names(layers):
    """TorchScript attribute names may not hold dots: features.0 becomes features_0."""
    names, taken = [], set()
    for layer in layers:
        base = layer.name.replace(".", "_").replace("+", "_") or "layer"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        taken.add(name)
        names.append(name)
    return names


def to_torchscript(layer, sample):
    """torch.jit.script where the layer's code allows it (it then works at any shape), else a
    trace on the sample (checked at another batch size afterwards)."""
    try:
        return torch.jit.script(layer.module), "script"
    except Exception:  # scripting refuses much Python; tracing takes it as it ran
        pass
    try:
        with torch.no_grad():
            return torch.jit.trace(layer.module, (sample,), check_trace=False), "trace"
    except Exception as error:
        raise InputError(f"layer {layer.name} ({layer.kind}) cannot be traced ({type(error).__name__}: "
                         f"{first_line(error)})") from None


def compare(expected, got, what):
    if not isinstance(got, torch.Tensor):
        raise InputError(f"{what}: the chain returns {type(got).__name__}, not one tensor")
    if expected.shape != got.shape:
        raise InputError(f"{what}: the chain's output is {list(got.shape)}, the model's {list(expected.shape)}; "
                         "its forward is not its children in order: return an nn.Sequential")
    scale = max(1.0, float(expected.abs().max()))
    difference = float((expected - got).abs().max()) / scale
    if not math.isfinite(difference) or difference > 1e-4:
        raise InputError(f"{what}: the chain's output differs from the model's (largest difference {difference:.3g} "
                         "of the output's scale); its forward is not its children in order: return an nn.Sequential")
    return difference


def build_chain(source, layers, spec, reference, seed):
    """The chain as one scripted nn.Sequential, each child scripted or traced, with its output
    checked against `reference` at the export batch and at one row more."""
    rows = spec.shape[0]
    samples = [spec.sample(rows, seed), spec.sample(rows + 1, seed + 1)]
    children, modes = collections.OrderedDict(), []
    activation = samples[0]
    with torch.no_grad():
        for layer, name in zip(layers, child_names(layers)):
            try:
                scripted, mode = to_torchscript(layer, activation)
            except InputError as error:
                raise InputError(f"{source}: {error}") from None
            scripted.eval()
            children[name] = scripted
            modes.append(mode)
            try:
                activation = scripted(activation.clone())
            except Exception as error:
                raise InputError(f"{source}: layer {layer.name} ({layer.kind}) fails on the sample input "
                                 f"{spec} ({type(error).__name__}: {first_line(error)}); check --input") from None
    chain = torch.jit.script(nn.Sequential(children))
    chain.eval()
    worst = 0.0
    with torch.no_grad():
        for sample in samples:
            expected = reference(sample.clone())
            try:
                got = chain(sample.clone())
            except Exception as error:
                raise InputError(f"{source}: the chain fails at batch {sample.shape[0]} ({first_line(error)}); a "
                                 "traced layer may hold the export batch as a constant: export at the batch you "
                                 "will profile") from None
            worst = max(worst, compare(expected, got, f"{source} at batch {sample.shape[0]}"))
    return chain, children, modes, worst


def with_loss(chain_children, loss, modes):
    children = collections.OrderedDict(chain_children)
    children[child_names([loss])[0]] = torch.jit.script(loss.module)
    modes.append("script")
    chain = torch.jit.script(nn.Sequential(children))
    chain.eval()
    return chain


def save_atomically(chain, path, metadata):
    partial = f"{path}.partial-{os.getpid()}"
    try:
        torch.jit.save(chain, partial, _extra_files={"stagecut.json": json.dumps(metadata, indent=1)})
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="stagecut_export.py", description="Export a model as a TorchScript chain for stagecut profile.",
        epilog="examples: torchvision:vgg16   hf:gpt2 --layers 4   hf:llama3-8b --layers 2 --input 1x512:int64:0..128256"
               "   module:my_model.py:build --input 16x1024:float32. Known hf configs: " + ", ".join(HF_KNOWN))
    parser.add_argument("source", metavar="SOURCE",
                        help="torchvision:NAME, hf:NAME, hf:path/config.json or module:path/file.py:function")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.pt", help="the TorchScript file to write")
    parser.add_argument("--input", metavar="SPEC",
                        help="the sample input, as stagecut profile takes it (default: 8x3x224x224:float32 for "
                             "torchvision, 4x256:int64:0..VOCAB for hf; required for module:)")
    parser.add_argument("--layers", type=int, metavar="K", help="hf: keep the first K transformer blocks")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and inputs (default 0)")
    parser.add_argument("--keep-nested", action="store_true",
                        help="keep nested nn.Sequential children whole instead of opening them into their layers")
    parser.add_argument("--no-loss", action="store_true", help="hf: end the chain at the head's logits")
    args = parser.parse_args(argv)
    if args.layers is not None and args.layers < 1:
        parser.error(f"--layers {args.layers}: give at least 1")
    return args


def main(argv):
    args = parse_arguments(argv)
    # Tracing warns at every Python branch on a shape, and transformers about its deprecations:
    # neither is the user's business here; the output check below is what proves the chain.
    warnings.filterwarnings("ignore")
    started = time.monotonic()
    kind, sep, rest = args.source.partition(":")
    if not sep or not rest or kind not in ("torchvision", "hf", "module"):
        raise InputError(f"{args.source}: not a source; write torchvision:NAME, hf:NAME, hf:path/config.json or "
                         "module:path/file.py:function")
    if args.layers is not None and kind != "hf":
        raise InputError(f"--layers: cuts the blocks of an hf: model only, not of {kind}:")
    if args.no_loss and kind != "hf":
        raise InputError(f"--no-loss: only an hf: model gets a loss layer, not a {kind}: one")
    directory = os.path.dirname(os.path.abspath(args.output))
    if os.path.isdir(args.output):
        raise InputError(f"-o {args.output}: is a folder; give the file to write, e.g. {os.path.join(args.output, 'model.pt')}")
    if not os.path.isdir(directory):
        raise InputError(f"-o {args.output}: the folder {directory} does not exist")
    if kind == "module" and os.path.abspath(rest.rpartition(":")[0]) == os.path.abspath(args.output):
        raise InputError(f"-o {args.output}: is the module's own file; write the chain elsewhere")
    torch.manual_seed(args.seed)
    loss, versions = None, {}
    if kind == "torchvision":
        model, layers, spec, versions = torchvision_source(rest, args)
        reference = model
    elif kind == "hf":
        model, layers, spec, versions, reference, loss = hf_source(rest, args)
        if args.no_loss:
            loss = None
    else:
        model, layers, spec, versions = module_source(rest, args)
        reference = model
    model.eval()
    chain, children, modes, worst = build_chain(args.source, layers, spec, reference, args.seed)
    if loss is not None:
        chain = with_loss(children, loss, modes)
        layers = layers + [loss]
    names = list(child_names(layers))
    metadata = {
        "format": "stagecut-chain", "version": FORMAT_VERSION, "source": args.source, "input": str(spec),
        "seed": args.seed, "exporter": dict(torch=torch.__version__, **versions),
        "layers": [dict(child=child, name=layer.name, kind=layer.kind, module=layer.fqn, inserted=layer.inserted,
                        compiled=mode) for child, layer, mode in zip(names, layers, modes)],
    }
    save_atomically(chain, args.output, metadata)
    parameters = sum(p.numel() for p in chain.parameters())
    traced = sum(1 for mode in modes if mode == "trace")
    print(f"wrote {args.output}: {len(layers)} layers of {args.source} ({parameters / 1e6:.1f} M parameters; "
          f"{traced} traced, {len(layers) - traced} scripted); the chain's output equals the model's at batch "
          f"{spec.shape[0]} and {spec.shape[0] + 1} (largest difference {worst:.2g}); {time.monotonic() - started:.1f} s")
    print("profile it with:")
    stem = os.path.splitext(args.output)[0]
    print(f"  stagecut profile --torchscript {args.output} --input {spec} -o {stem}.profile.json")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except InputError as error:
        fail(str(error), 2)
    except KeyboardInterrupt:
        fail("interrupted", 1)
    except Exception as error:  # one line, never a traceback
        fail(f"{type(error).__name__}: {first_line(error)}", 1)
