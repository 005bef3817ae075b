"""Writes a tiny TorchScript module for the `torchscript` target.

    .venv/bin/python examples/torchscript/make_tiny_module.py tiny_module.pt

It takes a [N, 3, H, W] float image batch and returns [N, 4]: a seeded
3x3 convolution to four channels, averaged over the image.
"""

import sys

import torch


class TinyModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, kernel_size=3, padding=1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.conv(images).relu().mean(dim=(2, 3))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_module.py OUTPUT.pt")
    torch.manual_seed(0)
    torch.jit.script(TinyModule()).save(sys.argv[1])


if __name__ == "__main__":
    main()
