"""The five architectures as standard torch.nn modules, loaded with the shared numpy weights.

Layout conversions from the neutral layouts of `fwbench.model.weights`:
- nn.Linear stores W as (out, in): the transpose of the neutral (in, out).
- nn.Conv2d stores (cout, cin, kh, kw); the neutral kernel is (kh, kw, cin, cout). Both are
  cross-correlations, and padding="same" pads (k-1)//2 before, like the reference.
- nn.RNN / nn.LSTM store W_ih as (G*H, in) with gates (i, f, g, o), the neutral order, and
  split the bias into bias_ih and bias_hh: the shared bias goes into bias_ih, zeros into bias_hh.
- nn.MultiheadAttention fuses Q/K/V into in_proj_weight (3d, d) = [Wq.T; Wk.T; Wv.T].
Inputs need no conversion: torch takes NCHW and batch-first sequences, the neutral layouts.

A precision other than float32 is the float32 module cast as torch's users cast one,
`module.to(dtype)`: every parameter and buffer in that dtype.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from fwbench.frameworks.info import BFLOAT16, FLOAT32, INT8_STATIC
from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.model.weights import Weights, dense_chain

# The torch dtype of each precision a torch mode runs (frameworks.mode_precisions).
# int8_static: the float32 module, quantized afterwards (frameworks.torch.quantize)
DTYPES = {FLOAT32: torch.float32, BFLOAT16: torch.bfloat16, INT8_STATIC: torch.float32}


def _dense_stack(widths: list[int]) -> list[nn.Module]:
    """Linear layers with ReLU between them and none after the last."""
    layers: list[nn.Module] = []
    for n_in, n_out in dense_chain(widths):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return layers[:-1]


class CNN(nn.Module):
    def __init__(self, spec: CNNSpec) -> None:
        super().__init__()
        blocks: list[nn.Module] = []
        cin = spec.channels
        for cout in spec.conv_channels:
            blocks += [nn.Conv2d(cin, cout, spec.kernel, padding="same"), nn.ReLU()]
            blocks.append(nn.MaxPool2d(2))
            cin = cout
        channels, height, width = spec.feature_map()
        self.features = nn.Sequential(*blocks)
        self.classifier = nn.Sequential(
            *_dense_stack([channels * height * width, *spec.dense, spec.classes])
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


class Recurrent(nn.Module):
    """Stacked Elman (tanh) RNN or LSTM from zero state; dense head on the last step."""

    def __init__(self, spec: RecurrentSpec) -> None:
        super().__init__()
        if spec.cell == "lstm":
            self.rnn: nn.Module = nn.LSTM(spec.input, spec.hidden, spec.layers, batch_first=True)
        elif spec.cell == "rnn":
            self.rnn = nn.RNN(
                spec.input, spec.hidden, spec.layers, nonlinearity="tanh", batch_first=True
            )
        else:
            raise ValueError(f"unknown recurrent cell {spec.cell!r}; known: rnn, lstm")
        self.head = nn.Linear(spec.hidden, spec.classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs, _ = self.rnn(x)
        return self.head(outputs[:, -1])


class Transformer(nn.Module):
    """Post-norm encoder (ReLU feed-forward, no dropout), mean-pool over the sequence, head."""

    def __init__(self, spec: TransformerSpec) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            spec.d_model,
            spec.heads,
            dim_feedforward=spec.ff,
            dropout=0.0,
            activation="relu",
            layer_norm_eps=spec.layer_norm_eps,
            batch_first=True,
            norm_first=False,
        )
        # Nested tensors only help with padding masks, which this model has none of.
        self.encoder = nn.TransformerEncoder(layer, spec.layers, enable_nested_tensor=False)
        self.head = nn.Linear(spec.d_model, spec.classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(dim=1))


def _linear(weights: Weights, prefix: str, target: str) -> dict[str, np.ndarray]:
    return {f"{target}.weight": weights[f"{prefix}.W"].T, f"{target}.bias": weights[f"{prefix}.b"]}


def _dense_state(weights: Weights, count: int, sequential: str) -> dict[str, np.ndarray]:
    # In a _dense_stack, Linear i sits at index 2*i (a ReLU between each pair).
    state: dict[str, np.ndarray] = {}
    for i in range(count):
        state |= _linear(weights, f"dense{i}", f"{sequential}{2 * i}")
    return state


def _state_dict(spec: ArchSpec, weights: Weights) -> dict[str, np.ndarray]:
    """The module's state dict, in numpy, from the neutral weights."""
    if isinstance(spec, MLPSpec):
        return _dense_state(weights, len(spec.hidden) + 1, "")
    if isinstance(spec, CNNSpec):
        state: dict[str, np.ndarray] = {}
        for i in range(len(spec.conv_channels)):
            # Each conv block is Conv2d, ReLU, MaxPool2d.
            state[f"features.{3 * i}.weight"] = weights[f"conv{i}.kernel"].transpose(3, 2, 0, 1)
            state[f"features.{3 * i}.bias"] = weights[f"conv{i}.b"]
        return state | _dense_state(weights, len(spec.dense) + 1, "classifier.")
    if isinstance(spec, RecurrentSpec):
        state = _linear(weights, "head", "head")
        for i in range(spec.layers):
            state[f"rnn.weight_ih_l{i}"] = weights[f"layer{i}.W_ih"].T
            state[f"rnn.weight_hh_l{i}"] = weights[f"layer{i}.W_hh"].T
            state[f"rnn.bias_ih_l{i}"] = weights[f"layer{i}.b"]
            state[f"rnn.bias_hh_l{i}"] = np.zeros_like(weights[f"layer{i}.b"])
        return state
    if isinstance(spec, TransformerSpec):
        state = _linear(weights, "head", "head")
        for i in range(spec.layers):
            src, dst = f"layer{i}", f"encoder.layers.{i}"
            attn = f"{src}.attn"
            state[f"{dst}.self_attn.in_proj_weight"] = np.concatenate(
                [weights[f"{attn}.W{proj}"].T for proj in "qkv"]
            )
            state[f"{dst}.self_attn.in_proj_bias"] = np.concatenate(
                [weights[f"{attn}.b{proj}"] for proj in "qkv"]
            )
            state[f"{dst}.self_attn.out_proj.weight"] = weights[f"{attn}.Wo"].T
            state[f"{dst}.self_attn.out_proj.bias"] = weights[f"{attn}.bo"]
            state |= _linear(weights, f"{src}.ff1", f"{dst}.linear1")
            state |= _linear(weights, f"{src}.ff2", f"{dst}.linear2")
            for norm in ("norm1", "norm2"):
                state[f"{dst}.{norm}.weight"] = weights[f"{src}.{norm}.gamma"]
                state[f"{dst}.{norm}.bias"] = weights[f"{src}.{norm}.beta"]
        return state
    raise TypeError(f"no torch model for spec {spec!r}")


def _module(spec: ArchSpec) -> nn.Module:
    if isinstance(spec, MLPSpec):
        return nn.Sequential(*_dense_stack([spec.input, *spec.hidden, spec.classes]))
    if isinstance(spec, CNNSpec):
        return CNN(spec)
    if isinstance(spec, RecurrentSpec):
        return Recurrent(spec)
    if isinstance(spec, TransformerSpec):
        return Transformer(spec)
    raise TypeError(f"no torch model for spec {spec!r}")


def build_module(spec: ArchSpec, weights: Weights, precision: str = FLOAT32) -> nn.Module:
    """The module of `spec` in eval mode, on the CPU, holding `weights`, in `precision`'s dtype
    (DTYPES; the float32 weights cast, rounded to nearest).

    The state dict is loaded strictly: a parameter the mapping misses, or one of the wrong
    shape, raises instead of keeping its random initialisation.
    """
    module = _module(spec)
    state = {
        name: torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32))
        for name, value in _state_dict(spec, weights).items()
    }
    module.load_state_dict(state, strict=True)
    module.requires_grad_(False)
    return module.to(DTYPES[precision]).eval()
