"""Float64 numpy forward passes: the ground truth every framework's output is compared with."""

from __future__ import annotations

import numpy as np

from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.model.weights import Weights


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _dense(w: dict[str, np.ndarray], prefix: str, x: np.ndarray) -> np.ndarray:
    return x @ w[f"{prefix}.W"] + w[f"{prefix}.b"]


def _dense_stack(w: dict[str, np.ndarray], x: np.ndarray, count: int) -> np.ndarray:
    """dense0..dense{count-1}, ReLU between them, none after the last."""
    for i in range(count):
        x = _dense(w, f"dense{i}", x)
        if i < count - 1:
            x = _relu(x)
    return x


def _conv_same(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Stride-1 'same' cross-correlation; x (N, C, H, W), kernel (kh, kw, cin, cout)."""
    kh, kw, _, cout = kernel.shape
    n, _, height, width = x.shape
    pad_h, pad_w = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad_h, kh - 1 - pad_h), (pad_w, kw - 1 - pad_w)))
    out = np.zeros((n, cout, height, width))
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i : i + height, j : j + width]
            out += np.einsum("nchw,co->nohw", window, kernel[i, j])
    return out + bias[None, :, None, None]


def _max_pool2(x: np.ndarray) -> np.ndarray:
    n, c, height, width = x.shape
    h2, w2 = height // 2, width // 2
    x = x[:, :, : 2 * h2, : 2 * w2].reshape(n, c, h2, 2, w2, 2)
    return x.max(axis=(3, 5))


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _attention(w: dict[str, np.ndarray], prefix: str, x: np.ndarray, heads: int) -> np.ndarray:
    batch, seq, d = x.shape
    head_dim = d // heads

    def split(t: np.ndarray) -> np.ndarray:
        return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

    q = split(x @ w[f"{prefix}.Wq"] + w[f"{prefix}.bq"])
    k = split(x @ w[f"{prefix}.Wk"] + w[f"{prefix}.bk"])
    v = split(x @ w[f"{prefix}.Wv"] + w[f"{prefix}.bv"])
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
    return context @ w[f"{prefix}.Wo"] + w[f"{prefix}.bo"]


def forward(spec: ArchSpec, weights: Weights, x: np.ndarray) -> np.ndarray:
    """Logits (batch, classes) in float64."""
    w = {name: value.astype(np.float64) for name, value in weights.items()}
    x = x.astype(np.float64)
    if isinstance(spec, MLPSpec):
        return _dense_stack(w, x, len(spec.hidden) + 1)
    if isinstance(spec, CNNSpec):
        for i in range(len(spec.conv_channels)):
            x = _max_pool2(_relu(_conv_same(x, w[f"conv{i}.kernel"], w[f"conv{i}.b"])))
        return _dense_stack(w, x.reshape(x.shape[0], -1), len(spec.dense) + 1)
    if isinstance(spec, RecurrentSpec):
        batch = x.shape[0]
        for layer in range(spec.layers):
            w_ih, w_hh, b = (w[f"layer{layer}.{k}"] for k in ("W_ih", "W_hh", "b"))
            h = np.zeros((batch, spec.hidden))
            c = np.zeros((batch, spec.hidden))
            outputs = []
            for t in range(spec.seq_len):
                z = x[:, t] @ w_ih + h @ w_hh + b
                if spec.cell == "lstm":
                    i, f, g, o = np.split(z, 4, axis=-1)
                    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                    h = _sigmoid(o) * np.tanh(c)
                else:
                    h = np.tanh(z)
                outputs.append(h)
            x = np.stack(outputs, axis=1)
        return _dense(w, "head", x[:, -1])
    if isinstance(spec, TransformerSpec):
        eps = spec.layer_norm_eps
        for layer in range(spec.layers):
            p = f"layer{layer}"
            x = _attention(w, f"{p}.attn", x, spec.heads) + x
            x = _layer_norm(x, w[f"{p}.norm1.gamma"], w[f"{p}.norm1.beta"], eps)
            ff = _dense(w, f"{p}.ff2", _relu(_dense(w, f"{p}.ff1", x)))
            x = _layer_norm(x + ff, w[f"{p}.norm2.gamma"], w[f"{p}.norm2.beta"], eps)
        return _dense(w, "head", x.mean(axis=1))
    raise TypeError(f"no reference forward for spec {spec!r}")


def max_errors(output: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(max absolute error, max absolute error ÷ max |reference|): the normwise relative error,
    which stays meaningful where single reference entries are near zero."""
    output = np.asarray(output, dtype=np.float64)
    if output.shape != reference.shape:
        raise ValueError(f"output shape {output.shape} != reference shape {reference.shape}")
    abs_err = float(np.max(np.abs(output - reference)))
    scale = float(np.max(np.abs(reference)))
    return abs_err, abs_err / scale if scale > 0 else abs_err
