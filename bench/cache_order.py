#!/usr/bin/env python3
"""How much what ran before a layer moves its time: one GPT block of the issue's smaller model
(hidden 256, 4 heads, seq 128, microbatch 2, one thread), its forward timed after an embedding's
weight gradient into an 8000 x 256 table (what the profile times before block.0), after another
block's backward (before every other block), right after its own forward, and after writing
64 MB; its backward right after its own forward (as the profile times it), with another block's
forward in between, and after writing 64 MB (as a pipeline may run other microbatches' ops in
between). Prints the median and the fastest of 35 interleaved timings each (docs/profiler.md,
"Inside the pipeline").
Usage: /usr/bin/python3 bench/cache_order.py   (Debian's python3-torch, or any PyTorch)
"""
import statistics
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
HIDDEN, SEQ, BATCH, VOCAB = 256, 128, 2, 8000


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(HIDDEN)
        self.attn = torch.nn.MultiheadAttention(HIDDEN, 4, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(HIDDEN)
        self.fc1 = torch.nn.Linear(HIDDEN, 4 * HIDDEN)
        self.fc2 = torch.nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


embedding, first, second = torch.nn.Embedding(VOCAB, HIDDEN), Block(), Block()
tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
first_input = embedding(tokens).detach().requires_grad_()
second_input = first(first_input).detach().requires_grad_()
upstream = torch.randn(BATCH, SEQ, HIDDEN)
flush = torch.empty(64 * 1024 * 1024 // 4)


def ms(run):
    start = time.perf_counter()
    result = run()
    return (time.perf_counter() - start) * 1e3, result


def embedding_weight_gradient():
    embedding(tokens).backward(upstream)


def block_backward(block, x):
    block(x).backward(upstream)


forward = {"after an embedding's W": [], "after another block's backward": [], "right after its own forward": [],
           "after writing 64 MB": []}
backward = {"right after its own forward": [], "another block's forward between": [], "after writing 64 MB": []}
for round_index in range(40):
    embedding_weight_gradient()
    forward["after an embedding's W"].append(ms(lambda: second(second_input))[0])
    block_backward(first, first_input)
    forward["after another block's backward"].append(ms(lambda: second(second_input))[0])
    second(second_input)
    forward["right after its own forward"].append(ms(lambda: second(second_input))[0])
    flush.add_(1.0)
    forward["after writing 64 MB"].append(ms(lambda: second(second_input))[0])

    output = second(second_input)
    backward["right after its own forward"].append(ms(lambda: output.backward(upstream))[0])
    output = second(second_input)
    first(first_input)
    backward["another block's forward between"].append(ms(lambda: output.backward(upstream))[0])
    output = second(second_input)
    flush.add_(1.0)
    backward["after writing 64 MB"].append(ms(lambda: output.backward(upstream))[0])

for title, table in (("forward", forward), ("backward", backward)):
    print(title)
    for name, samples in table.items():
        kept = samples[5:]  # the first rounds warm the allocator and the kernels
        print(f"  {name:34s} median {statistics.median(kept):6.2f} ms  fastest {min(kept):6.2f} ms")
