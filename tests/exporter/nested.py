# Models for tests/exporter_test.sh, given to the exporter as module:tests/exporter/nested.py:NAME.
import torch
from torch import nn


def nested():
    """A Sequential holding a Sequential, with an in-place ReLU at a layer's input."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Sequential(nn.ReLU(inplace=True), nn.Linear(16, 16)), nn.Tanh(),
                         nn.Linear(16, 4))


class Residual(nn.Module):
    """Its forward adds its input back: not its children in order."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(8, 8)
        self.outer = nn.Linear(8, 8)

    def forward(self, x):
        return self.outer(x + self.inner(x))


def residual():
    return Residual()


class Broken(nn.Module):
    def forward(self, x):
        raise RuntimeError("no")


def not_a_module():
    return 42
