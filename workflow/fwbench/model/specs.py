"""Architectures as data: one frozen spec per architecture, built from the config's dims.

Every framework adapter, the numpy reference and the cost model read the same spec, so a
dimension changed in the config changes the model everywhere.

Input layouts (the framework-neutral convention every adapter receives):
- mlp: (batch, input)
- cnn: (batch, channels, height, width)  NCHW
- rnn, lstm: (batch, seq_len, input)      batch-first
- transformer: (batch, seq_len, d_model)
Every architecture returns logits of shape (batch, classes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ARCHITECTURES = ("mlp", "cnn", "rnn", "lstm", "transformer")


@dataclass(frozen=True)
class MLPSpec:
    input: int = 784
    hidden: tuple[int, ...] = (512, 512)
    classes: int = 10
    name: str = field(default="mlp", init=False)

    def input_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, self.input)


@dataclass(frozen=True)
class CNNSpec:
    """Conv(k×k, same padding, stride 1) + ReLU + 2×2 max-pool per block, then dense layers.

    The flatten before the dense layers is in (channels, height, width) order.
    """

    channels: int = 3
    height: int = 32
    width: int = 32
    conv_channels: tuple[int, ...] = (32, 64)
    kernel: int = 3
    dense: tuple[int, ...] = (128,)
    classes: int = 10
    name: str = field(default="cnn", init=False)

    def input_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, self.channels, self.height, self.width)

    def feature_map(self) -> tuple[int, int, int]:
        """(channels, height, width) after the last conv block."""
        height, width = self.height, self.width
        for _ in self.conv_channels:
            height, width = height // 2, width // 2
        return self.conv_channels[-1], height, width


@dataclass(frozen=True)
class RecurrentSpec:
    """Elman RNN (tanh) or LSTM: stacked layers, h0 = c0 = 0, dense head on the last step."""

    cell: str = "rnn"
    input: int = 32
    hidden: int = 128
    layers: int = 2
    seq_len: int = 32
    classes: int = 10

    @property
    def name(self) -> str:
        return self.cell

    @property
    def gates(self) -> int:
        return 4 if self.cell == "lstm" else 1

    def input_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, self.seq_len, self.input)

    @property
    def steps(self) -> int:
        """Recurrent cell steps per call, each waiting on the one before: every layer runs
        the sequence in turn."""
        return self.seq_len * self.layers


@dataclass(frozen=True)
class TransformerSpec:
    """Post-norm encoder layers (x = LN(x + MHA(x)); x = LN(x + FF(x))), ReLU feed-forward,
    LayerNorm eps 1e-5, no dropout; mean-pool over the sequence, then a dense head."""

    d_model: int = 128
    heads: int = 4
    ff: int = 512
    layers: int = 2
    seq_len: int = 32
    classes: int = 10
    layer_norm_eps: float = 1e-5
    name: str = field(default="transformer", init=False)

    def input_shape(self, batch: int) -> tuple[int, ...]:
        return (batch, self.seq_len, self.d_model)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


ArchSpec = MLPSpec | CNNSpec | RecurrentSpec | TransformerSpec


def _tupled(dims: dict[str, Any]) -> dict[str, Any]:
    return {key: tuple(value) if isinstance(value, list) else value for key, value in dims.items()}


def build_spec(arch: str, dims: dict[str, Any] | None = None) -> ArchSpec:
    """The spec of `arch` with `dims` (a config's `dims.<arch>` mapping) over the defaults."""
    dims = _tupled(dims or {})
    if arch == "mlp":
        spec: ArchSpec = MLPSpec(**dims)
    elif arch == "cnn":
        spec = CNNSpec(**dims)
    elif arch in ("rnn", "lstm"):
        spec = RecurrentSpec(cell=arch, **dims)
    elif arch == "transformer":
        spec = TransformerSpec(**dims)
    else:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    _check(spec)
    return spec


def _check(spec: ArchSpec) -> None:
    if isinstance(spec, TransformerSpec) and spec.d_model % spec.heads:
        raise ValueError(
            f"transformer: d_model={spec.d_model} is not divisible by heads={spec.heads}"
        )
    if isinstance(spec, CNNSpec):
        _, height, width = spec.feature_map()
        if height < 1 or width < 1:
            raise ValueError(
                f"cnn: {spec.height}x{spec.width} input is too small for "
                f"{len(spec.conv_channels)} pooling blocks"
            )
