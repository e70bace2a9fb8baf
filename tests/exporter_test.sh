#!/usr/bin/env bash
# tools/stagecut_export.py end to end: exports a nested Sequential, vgg11 (in-place ReLUs),
# resnet18, and small GPT-2 and LLaMA configs at small inputs, checks each chain's output against the
# model rebuilt here from the same seed (not the exporter's own check), then profiles each file
# and checks the profile's layer names and kinds; and the refusals, each one line with exit 2.
# Usage: tests/exporter_test.sh STAGECUT SOURCE_DIR
# The Python is $STAGECUT_EXPORT_PYTHON (make test sets it: .deps/export-venv, Debian's torch 1.13;
# with TORCH=pip .deps/export-venv-torch2, the wheel's torch 2.x), else .deps/export-venv/bin/python,
# else Debian's /usr/bin/python3. Without torch it skips (exit 77) saying why;
# without torchvision or transformers it skips those cases with a WARN.
set -euo pipefail
stagecut=$(realpath "${1:?usage: exporter_test.sh STAGECUT SOURCE_DIR}")
source_dir=$(realpath "${2:?usage: exporter_test.sh STAGECUT SOURCE_DIR}")
exporter=$source_dir/tools/stagecut_export.py
# shellcheck source=tests/export_python.sh
source "$source_dir/tests/export_python.sh" "$source_dir"
if [[ -z "$python" ]]; then
  echo "WARN: no Python with torch (tried \$STAGECUT_EXPORT_PYTHON, .deps/export-venv, /usr/bin/python3, python3): install python3-torch; the exporter is not tested"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
has() { "$python" -c "import $1" 2>/dev/null; }
quick=(--warmup 0 --min-repeats 1 --max-repeats 1)
echo "python: $python (torch $("$python" -c 'import torch; print(torch.__version__)'))"

# Exports SOURCE to NAME.pt at INPUT, then profiles it; prints the exporter's output.
export_and_profile() {
  local name=$1 source=$2 input=$3
  shift 3
  "$python" "$exporter" "$source" -o "$name.pt" --input "$input" "$@" || { fail "$source: export failed"; return 1; }
  "$stagecut" profile --torchscript "$name.pt" --input "$input" "${quick[@]}" -o "$name.json" >/dev/null ||
    { fail "$source: profile of the exported chain failed"; return 1; }
}

# The profile's layers as name:kind, one line.
layers_of() {
  "$python" -c 'import json, sys; print(" ".join(l["name"] + ":" + l["kind"] for l in json.load(open(sys.argv[1]))["layers"]))' "$1"
}

expect_layers() {
  local name=$1 expected=$2 got
  got=$(layers_of "$name.json")
  [[ "$got" == "$expected" ]] || fail "$name: profile layers are
  $got
expected
  $expected"
}

# The chain against the model, rebuilt here: CODE defines `model` (eval mode) and `x`.
expect_same_output() {
  local name=$1 code=$2
  "$python" - "$name.pt" <<PY || fail "$name: the chain's output is not the model's"
import sys, torch
torch.manual_seed(0)
$code
chain = torch.jit.load(sys.argv[1])
chain.eval()
with torch.no_grad():
    want, got = reference(x), chain(x)
assert want.shape == got.shape, (want.shape, got.shape)
assert torch.allclose(want, got, rtol=1e-5, atol=1e-5), float((want - got).abs().max())
print("$name: the chain equals the model at", list(x.shape))
PY
}

# Runs a command that must fail with exit 2 and print exactly one line that starts with PREFIX.
expect_refusal() {
  local prefix=$1 out rc
  shift
  set +e
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  set -e
  if [[ $rc -ne 2 || $(printf '%s\n' "$out" | wc -l) -ne 1 || "$out" != "$prefix"* ]]; then
    fail "expected one line starting with '$prefix' and exit 2, got exit $rc:
$out"
  fi
}

# 1. A nested Sequential, opened up (names as the model's own paths) or kept whole.
module=module:$source_dir/tests/exporter/nested.py
if export_and_profile nested "$module:nested" 4x8:float32; then
  expect_layers nested "0:Linear 1.0:ReLU 1.1:Linear 2:Tanh 3:Linear"
  expect_same_output nested "
sys.path.insert(0, '$source_dir/tests/exporter')
import nested
reference = nested.nested().eval()
x = torch.randn(5, 8)"
fi
if export_and_profile kept "$module:nested" 4x8:float32 --keep-nested; then
  expect_layers kept "0:Linear 1:Sequential 2:Tanh 3:Linear"
fi
# The failing layer's one line, named as the profile names it (an input of the wrong width).
expect_refusal "stagecut: nested.pt: layer 0 (0, Linear) failed on the sample input (mat1 and mat2 shapes cannot be multiplied (4x7 and 8x16)); check --input" \
  "$stagecut" profile --torchscript nested.pt --input 4x7:float32 "${quick[@]}" -o bad.json
[[ ! -e bad.json ]] || fail "a refused profile left bad.json"

# 2-3. torchvision: vgg11 (in-place ReLUs at layer inputs, the flatten its forward does inline)
# and resnet18 (broken at its bottlenecks).
if has torchvision; then
  vgg="features.0:Conv2d features.1:ReLU features.2:MaxPool2d features.3:Conv2d features.4:ReLU features.5:MaxPool2d"
  vgg+=" features.6:Conv2d features.7:ReLU features.8:Conv2d features.9:ReLU features.10:MaxPool2d"
  vgg+=" features.11:Conv2d features.12:ReLU features.13:Conv2d features.14:ReLU features.15:MaxPool2d"
  vgg+=" features.16:Conv2d features.17:ReLU features.18:Conv2d features.19:ReLU features.20:MaxPool2d"
  vgg+=" avgpool:AdaptiveAvgPool2d flatten:Flatten classifier.0:Linear classifier.1:ReLU classifier.2:Dropout"
  vgg+=" classifier.3:Linear classifier.4:ReLU classifier.5:Dropout classifier.6:Linear"
  if export_and_profile vgg11 torchvision:vgg11 2x3x32x32:float32; then
    expect_layers vgg11 "$vgg"
    expect_same_output vgg11 "
import torchvision
reference = torchvision.models.vgg11(weights=None).eval()
x = torch.randn(3, 3, 32, 32)"
  fi
  resnet="conv1:Conv2d bn1:BatchNorm2d relu:ReLU maxpool:MaxPool2d"
  for stage in 1 2 3 4; do resnet+=" layer$stage.0:BasicBlock layer$stage.1:BasicBlock"; done
  resnet+=" avgpool:AdaptiveAvgPool2d flatten:Flatten fc:Linear"
  if export_and_profile resnet18 torchvision:resnet18 2x3x32x32:float32; then
    expect_layers resnet18 "$resnet"
    expect_same_output resnet18 "
import torchvision
reference = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(3, 3, 32, 32)"
  fi
  expect_refusal "stagecut_export: torchvision:vit_b_16: a VisionTransformer's forward is not a chain of its children" \
    "$python" "$exporter" torchvision:vit_b_16 -o vit.pt
else
  echo "WARN: $python has no torchvision: vgg11 and resnet18 are not tested (install python3-torchvision)"
fi

# 4. Hugging Face decoders: GPT-2 and the LLaMA layout (rotary positions, causal mask passed to
# the blocks) from small config files, profiled with the zoo's names and kinds, so the head/loss
# rules apply; each one's logits (--no-loss) against the model.
if has transformers; then
  configs=$source_dir/tests/exporter
  decoder="embed:Embedding block.0:TransformerBlock block.1:TransformerBlock head:LMHead loss:CrossEntropyLoss"
  for family in gpt2 llama; do
    if export_and_profile "$family" "hf:$configs/tiny-$family.json" 2x16:int64:0..1000; then
      expect_layers "$family" "$decoder"
      "$stagecut" partition "$family.json" --stages 2 --format megatron >partition.txt ||
        fail "$family: partition --format megatron refused the exported chain"
      grep -q -- '--pipeline-model-parallel-layout "E' partition.txt || fail "$family: no Megatron layout: $(cat partition.txt)"
    fi
    "$python" "$exporter" "hf:$configs/tiny-$family.json" -o "$family-logits.pt" --input 2x16:int64:0..1000 --no-loss \
      >/dev/null || fail "hf:tiny-$family.json --no-loss: export failed"
    expect_same_output "$family-logits" "
import json, transformers
values = json.load(open('$configs/tiny-$family.json'))
config = transformers.AutoConfig.for_model(values.pop('model_type'), **values, tie_word_embeddings=False, use_cache=False)
model = transformers.AutoModelForCausalLM.from_config(config).eval()
reference = lambda ids: model(ids).logits
x = torch.randint(0, 1000, (3, 16))"
  done
  # A known name takes its published shape: GPT-2's 1024 positions.
  expect_refusal "stagecut_export: --input 1x2048:int64:0..50257: 2048 tokens exceed the model's 1024 positions" \
    "$python" "$exporter" hf:gpt2 --layers 1 -o x.pt --input 1x2048:int64:0..50257
  expect_refusal "stagecut_export: hf:gpt3: not a config this exporter knows" "$python" "$exporter" hf:gpt3 -o x.pt
else
  echo "WARN: $python has no transformers: the Hugging Face exports are not tested (make test installs it into .deps/export-venv)"
fi

# Refusals: one line, exit 2, nothing written.
expect_refusal "stagecut_export: module:$source_dir/tests/exporter/nested.py:residual at batch 4: the chain's output differs from the model's" \
  "$python" "$exporter" "$module:residual" -o residual.pt --input 4x8:float32
[[ ! -e residual.pt ]] || fail "a refused export left residual.pt"
expect_refusal "stagecut_export: module:$source_dir/tests/exporter/nested.py:not_a_module: not_a_module() returns int, not an nn.Module" \
  "$python" "$exporter" "$module:not_a_module" -o x.pt --input 4x8:float32
expect_refusal "stagecut_export: module:$source_dir/tests/exporter/nested.py:nested: give the model's --input" \
  "$python" "$exporter" "$module:nested" -o x.pt
expect_refusal "stagecut_export: -o $source_dir/tests/exporter/nested.py: is the module's own file" \
  "$python" "$exporter" "$module:nested" -o "$source_dir/tests/exporter/nested.py" --input 4x8:float32
expect_refusal "stagecut_export: keras:resnet: not a source" "$python" "$exporter" keras:resnet -o x.pt
expect_refusal "stagecut_export: -o missing/x.pt: the folder $work/missing does not exist" \
  "$python" "$exporter" "$module:nested" -o missing/x.pt --input 4x8:float32
expect_refusal "stagecut_export: --input 4x8: not SHAPE:DTYPE" "$python" "$exporter" "$module:nested" -o x.pt --input 4x8
[[ ! -e x.pt ]] || fail "a refused export left x.pt"
ls ./*.partial-* >/dev/null 2>&1 && fail "an export left a partial file: $(ls ./*.partial-*)"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "exporter: every check passed"
