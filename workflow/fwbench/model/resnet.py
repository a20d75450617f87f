"""The ResNet trained by the training benchmarks: its spec as data and its seeded numpy weights
(the float64 forward pass, the ground truth, is fwbench.model.resnet_reference).

The layer list is data (`ResNetSpec.stem` and `ResNetSpec.blocks()`), so every framework builds
the same network by walking it. Conventions shared by all three frameworks:
- input NCHW (each framework may transpose the whole dataset once to its own layout);
- every conv is a cross-correlation with symmetric zero padding kernel // 2 and no bias, and is
  followed by batch norm; ReLU after each BN except the last of a block, whose output is added
  to the shortcut before the ReLU;
- a block's stride sits on its 3×3 conv (basic: conv1, bottleneck: conv2, "ResNet v1.5"); the
  shortcut is the identity, or a 1×1 conv with the block's stride + BN when the shape changes;
- the "imagenet" stem is a 7×7 stride-2 conv + BN + ReLU + 3×3 stride-2 max pool (padding 1,
  padded with -inf); the "small" stem is a 3×3 stride-1 conv + BN + ReLU;
- global average pool, then the dense layer `head` (logits).
Batch norm in training mode normalizes with the batch mean and the biased batch variance over
(N, H, W) and updates running = (1 − momentum)·running + momentum·batch statistic, where the
variance term is the UNBIASED batch variance (torch's convention), momentum 0.1, eps 1e-5.

Weight names and neutral layouts (as in weights.py): conv `<conv>.kernel` (kh, kw, cin, cout);
batch norm `<bn>.gamma`, `<bn>.beta`, `<bn>.running_mean`, `<bn>.running_var` (channels,);
dense `head.W` (in, out), `head.b`. Convs are `stem.conv`, `stage{s}.block{b}.conv{i}` and
`stage{s}.block{b}.shortcut.conv`; each BN is named like its conv with `conv` → `bn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fwbench.model.weights import Weights
from fwbench.rng import seeded_rng

BLOCKS = ("basic", "bottleneck")
STEMS = ("small", "imagenet")
BN_PARAMS = ("gamma", "beta")
BN_STATS = ("running_mean", "running_var")

# Named presets (the `train.architectures` defaults of the config mirror these).
PRESETS: dict[str, dict[str, Any]] = {
    "resnet8": {"block": "basic", "stages": [1, 1, 1], "base_width": 16, "stem": "small"},
    "resnet50": {
        "block": "bottleneck",
        "stages": [3, 4, 6, 3],
        "base_width": 64,
        "stem": "imagenet",
    },
}


@dataclass(frozen=True)
class Conv:
    """A bias-free conv followed by batch norm `bn`; padding is kernel // 2 on every side."""

    name: str
    bn: str
    kernel: int
    stride: int
    cin: int
    cout: int

    @property
    def padding(self) -> int:
        return self.kernel // 2


@dataclass(frozen=True)
class Block:
    """Residual block: `convs` applied in order (ReLU between them), plus the shortcut."""

    prefix: str
    convs: tuple[Conv, ...]
    shortcut: Conv | None

    @property
    def cin(self) -> int:
        return self.convs[0].cin

    @property
    def cout(self) -> int:
        return self.convs[-1].cout


def _conv(prefix: str, index: int | str, kernel: int, stride: int, cin: int, cout: int) -> Conv:
    return Conv(f"{prefix}.conv{index}", f"{prefix}.bn{index}", kernel, stride, cin, cout)


@dataclass(frozen=True)
class ResNetSpec:
    """A ResNet: `stages[s]` blocks in stage s, stage s has base_width·2^s channels (× 4 at the
    output of a bottleneck block); stage 0 keeps the resolution, each later stage halves it."""

    block: str = "basic"
    stages: tuple[int, ...] = (1, 1, 1)
    base_width: int = 16
    stem: str = "small"
    channels: int = 1
    height: int = 8
    width: int = 8
    classes: int = 10
    bn_eps: float = 1e-5
    bn_momentum: float = 0.1
    name: str = field(default="resnet", init=False)

    @property
    def expansion(self) -> int:
        return 4 if self.block == "bottleneck" else 1

    def input_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, self.channels, self.height, self.width)

    @property
    def stem_conv(self) -> Conv:
        if self.stem == "imagenet":
            return Conv("stem.conv", "stem.bn", 7, 2, self.channels, self.base_width)
        return Conv("stem.conv", "stem.bn", 3, 1, self.channels, self.base_width)

    @property
    def stem_pool(self) -> bool:
        """True: a 3×3 stride-2 max pool with padding 1 follows the stem."""
        return self.stem == "imagenet"

    def blocks(self) -> list[Block]:
        blocks = []
        cin = self.base_width
        for s, count in enumerate(self.stages):
            mid = self.base_width * 2**s
            cout = mid * self.expansion
            for b in range(count):
                prefix = f"stage{s}.block{b}"
                stride = 2 if s > 0 and b == 0 else 1
                if self.block == "basic":
                    convs = (
                        _conv(prefix, 1, 3, stride, cin, mid),
                        _conv(prefix, 2, 3, 1, mid, mid),
                    )
                else:
                    convs = (
                        _conv(prefix, 1, 1, 1, cin, mid),
                        _conv(prefix, 2, 3, stride, mid, mid),
                        _conv(prefix, 3, 1, 1, mid, cout),
                    )
                shortcut = None
                if stride != 1 or cin != cout:
                    shortcut = Conv(
                        f"{prefix}.shortcut.conv", f"{prefix}.shortcut.bn", 1, stride, cin, cout
                    )
                blocks.append(Block(prefix, convs, shortcut))
                cin = cout
        return blocks

    def convs(self) -> list[Conv]:
        """Every conv in the order the forward pass applies it (shortcut after the main path)."""
        convs = [self.stem_conv]
        for block in self.blocks():
            convs.extend(block.convs)
            if block.shortcut is not None:
                convs.append(block.shortcut)
        return convs

    @property
    def features(self) -> int:
        """Channels entering the head."""
        return self.base_width * 2 ** (len(self.stages) - 1) * self.expansion

    def feature_map(self) -> tuple[int, int]:
        """(height, width) entering the global average pool."""
        windows = [self.stem_conv]
        if self.stem_pool:
            windows.append(Conv("stem.pool", "", 3, 2, 0, 0))
        windows += [conv for block in self.blocks() for conv in block.convs]
        height, width = self.height, self.width
        for window in windows:
            height = (height + 2 * window.padding - window.kernel) // window.stride + 1
            width = (width + 2 * window.padding - window.kernel) // window.stride + 1
        return height, width


def build_resnet(
    dims: dict[str, Any], channels: int, height: int, width: int, classes: int
) -> ResNetSpec:
    """The spec for a config's architecture `dims` (block, stages, base_width, stem) on images
    of the given shape with `classes` classes."""
    unknown = set(dims) - {"block", "stages", "base_width", "stem"}
    if unknown:
        raise ValueError(
            f"unknown ResNet dims {sorted(unknown)}; known: block, stages, base_width, stem"
        )
    spec = ResNetSpec(
        block=dims.get("block", "basic"),
        stages=tuple(dims.get("stages", (1, 1, 1))),
        base_width=dims.get("base_width", 16),
        stem=dims.get("stem", "small"),
        channels=channels,
        height=height,
        width=width,
        classes=classes,
    )
    _check(spec)
    return spec


def _check(spec: ResNetSpec) -> None:
    if spec.block not in BLOCKS:
        raise ValueError(f"unknown ResNet block {spec.block!r}; known: {', '.join(BLOCKS)}")
    if spec.stem not in STEMS:
        raise ValueError(f"unknown ResNet stem {spec.stem!r}; known: {', '.join(STEMS)}")
    if not spec.stages or any(count < 1 for count in spec.stages):
        raise ValueError(f"ResNet stages must be positive block counts, got {spec.stages!r}")
    for name, value in (("base_width", spec.base_width), ("classes", spec.classes)):
        if value < 1:
            raise ValueError(f"ResNet {name} must be positive, got {value}")


def make_weights(spec: ResNetSpec, seed: int = 0) -> Weights:
    """He-normal conv kernels (std √(2 / fan_in)), BN γ = 1, β = 0, running mean 0 and
    variance 1, head uniform ±1/√fan_in. Each tensor has its own generator keyed by its name,
    so adding a layer does not change the others."""

    def rng(name: str) -> np.random.Generator:
        return seeded_rng(seed, f"resnet/{name}")

    weights: Weights = {}
    for conv in spec.convs():
        fan_in = conv.kernel * conv.kernel * conv.cin
        shape = (conv.kernel, conv.kernel, conv.cin, conv.cout)
        kernel = rng(conv.name).normal(0.0, np.sqrt(2.0 / fan_in), size=shape)
        weights[f"{conv.name}.kernel"] = kernel.astype(np.float32)
        weights[f"{conv.bn}.gamma"] = np.ones(conv.cout, np.float32)
        weights[f"{conv.bn}.beta"] = np.zeros(conv.cout, np.float32)
        weights[f"{conv.bn}.running_mean"] = np.zeros(conv.cout, np.float32)
        weights[f"{conv.bn}.running_var"] = np.ones(conv.cout, np.float32)
    bound = 1.0 / np.sqrt(spec.features)
    head_w = rng("head.W").uniform(-bound, bound, (spec.features, spec.classes))
    weights["head.W"] = head_w.astype(np.float32)
    weights["head.b"] = rng("head.b").uniform(-bound, bound, spec.classes).astype(np.float32)
    return weights


def is_trainable(name: str) -> bool:
    """Every weight except the BN running statistics is trained (and weight-decayed)."""
    return not name.endswith(BN_STATS)
