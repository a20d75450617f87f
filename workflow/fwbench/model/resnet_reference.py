"""The ResNet's float64 numpy forward pass: the ground truth for the training benchmarks' loss
and batch-norm updates (conventions: fwbench.model.resnet)."""

from __future__ import annotations

import numpy as np

from fwbench.model.resnet import BN_STATS, Conv, ResNetSpec
from fwbench.model.weights import Weights


def _conv2d(x: np.ndarray, kernel: np.ndarray, stride: int, padding: int) -> np.ndarray:
    kh, kw, _, _ = kernel.shape
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out_h = (padded.shape[2] - kh) // stride + 1
    out_w = (padded.shape[3] - kw) // stride + 1
    out = 0.0
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i : i + stride * out_h : stride, j : j + stride * out_w : stride]
            out = out + np.einsum("nchw,co->nohw", window, kernel[i, j])
    return out


def _max_pool_3x3_s2(x: np.ndarray, margins: list[float] | None) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    out_h, out_w = (padded.shape[2] - 3) // 2 + 1, (padded.shape[3] - 3) // 2 + 1
    windows = np.stack(
        [
            padded[:, :, i : i + 2 * out_h : 2, j : j + 2 * out_w : 2]
            for i in range(3)
            for j in range(3)
        ]
    )
    if margins is not None:
        runner_up, top = np.sort(windows, axis=0)[-2:]
        margins.append(float(np.min(np.where(top > 0, top - runner_up, np.inf))))
    return windows.max(axis=0)


def reference_forward(
    spec: ResNetSpec,
    weights: Weights,
    x: np.ndarray,
    training: bool,
    margins: list[float] | None = None,
) -> tuple[np.ndarray, Weights]:
    """Float64 logits for an NCHW batch, and the running statistics after this forward pass
    (unchanged when not `training`).

    `margins`, when given, collects per ReLU the smallest |input| and per max pool the smallest
    gap between a positive maximum and its runner-up: branch points where float32 rounding may
    legitimately send two frameworks' gradients different ways.
    """

    def relu(value: np.ndarray) -> np.ndarray:
        if margins is not None:
            margins.append(float(np.min(np.abs(value))))
        return np.maximum(value, 0.0)

    w = {name: value.astype(np.float64) for name, value in weights.items()}
    stats: Weights = {name: value for name, value in w.items() if name.endswith(BN_STATS)}

    def conv_bn(h: np.ndarray, conv: Conv) -> np.ndarray:
        h = _conv2d(h, w[f"{conv.name}.kernel"], conv.stride, conv.padding)
        if training:
            mean, var = h.mean(axis=(0, 2, 3)), h.var(axis=(0, 2, 3))
            count = h.size // h.shape[1]
            m = spec.bn_momentum
            stats[f"{conv.bn}.running_mean"] = (1 - m) * stats[f"{conv.bn}.running_mean"] + m * mean
            stats[f"{conv.bn}.running_var"] = (1 - m) * stats[f"{conv.bn}.running_var"] + m * (
                var * count / (count - 1)
            )
        else:
            mean, var = w[f"{conv.bn}.running_mean"], w[f"{conv.bn}.running_var"]
        scale = w[f"{conv.bn}.gamma"] / np.sqrt(var + spec.bn_eps)
        shift = w[f"{conv.bn}.beta"] - mean * scale
        return h * scale[None, :, None, None] + shift[None, :, None, None]

    h = relu(conv_bn(x.astype(np.float64), spec.stem_conv))
    if spec.stem_pool:
        h = _max_pool_3x3_s2(h, margins)
    for block in spec.blocks():
        out = h
        for i, conv in enumerate(block.convs):
            out = conv_bn(out, conv)
            if i < len(block.convs) - 1:
                out = relu(out)
        shortcut = h if block.shortcut is None else conv_bn(h, block.shortcut)
        h = relu(out + shortcut)
    logits = h.mean(axis=(2, 3)) @ w["head.W"] + w["head.b"]
    return logits, stats


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean softmax cross-entropy over the batch (float64)."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())
