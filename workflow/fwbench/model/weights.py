"""One seeded set of float32 weights per (architecture spec, seed), shared by every framework.

Layouts are the framework-neutral "math" layouts below; each adapter converts them to its own
(e.g. torch Linear stores W.T, TF conv wants NHWC inputs, torch fuses Q/K/V):
- dense `<p>.W` (in, out), `<p>.b` (out,): y = x @ W + b
- conv `<p>.kernel` (kh, kw, cin, cout) applied as cross-correlation, `<p>.b` (cout,)
- recurrent layer `<p>.W_ih` (in, G*H), `<p>.W_hh` (H, G*H), `<p>.b` (G*H,): one bias;
  LSTM gates are stacked in the order (input, forget, cell, output)
- attention `<p>.Wq/.Wk/.Wv/.Wo` (d, d) with biases `.bq/.bk/.bv/.bo`; layer norm `.gamma/.beta`
Prefixes: mlp `dense{i}`; cnn `conv{i}`, `dense{i}`; rnn/lstm `layer{i}`, `head`;
transformer `layer{i}.attn`, `layer{i}.ff1`, `layer{i}.ff2`, `layer{i}.norm1`, `layer{i}.norm2`,
`head`. Dense layers are numbered from 0 in the order they are applied.
"""

from __future__ import annotations

import numpy as np

from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.rng import seeded_rng

Weights = dict[str, np.ndarray]


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """Uniform(±1/sqrt(fan_in)): keeps activations O(1) so relative errors mean something."""
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _dense(rng: np.random.Generator, prefix: str, n_in: int, n_out: int) -> Weights:
    return {
        f"{prefix}.W": _uniform(rng, (n_in, n_out), n_in),
        f"{prefix}.b": _uniform(rng, (n_out,), n_in),
    }


def dense_chain(widths: list[int]) -> list[tuple[int, int]]:
    return list(zip(widths[:-1], widths[1:], strict=True))


def make_weights(spec: ArchSpec, seed: int = 0) -> Weights:
    rng = seeded_rng(seed, spec.name)
    weights: Weights = {}
    if isinstance(spec, MLPSpec):
        widths = [spec.input, *spec.hidden, spec.classes]
        for i, (n_in, n_out) in enumerate(dense_chain(widths)):
            weights |= _dense(rng, f"dense{i}", n_in, n_out)
    elif isinstance(spec, CNNSpec):
        cin = spec.channels
        for i, cout in enumerate(spec.conv_channels):
            fan_in = spec.kernel * spec.kernel * cin
            weights[f"conv{i}.kernel"] = _uniform(
                rng, (spec.kernel, spec.kernel, cin, cout), fan_in
            )
            weights[f"conv{i}.b"] = _uniform(rng, (cout,), fan_in)
            cin = cout
        channels, height, width = spec.feature_map()
        widths = [channels * height * width, *spec.dense, spec.classes]
        for i, (n_in, n_out) in enumerate(dense_chain(widths)):
            weights |= _dense(rng, f"dense{i}", n_in, n_out)
    elif isinstance(spec, RecurrentSpec):
        n_in, hidden, width = spec.input, spec.hidden, spec.gates * spec.hidden
        for i in range(spec.layers):
            weights[f"layer{i}.W_ih"] = _uniform(rng, (n_in, width), hidden)
            weights[f"layer{i}.W_hh"] = _uniform(rng, (hidden, width), hidden)
            weights[f"layer{i}.b"] = _uniform(rng, (width,), hidden)
            n_in = hidden
        weights |= _dense(rng, "head", hidden, spec.classes)
    elif isinstance(spec, TransformerSpec):
        d = spec.d_model
        for i in range(spec.layers):
            for proj in ("q", "k", "v", "o"):
                weights[f"layer{i}.attn.W{proj}"] = _uniform(rng, (d, d), d)
                weights[f"layer{i}.attn.b{proj}"] = _uniform(rng, (d,), d)
            weights |= _dense(rng, f"layer{i}.ff1", d, spec.ff)
            weights |= _dense(rng, f"layer{i}.ff2", spec.ff, d)
            for norm in ("norm1", "norm2"):
                weights[f"layer{i}.{norm}.gamma"] = (1.0 + 0.1 * rng.standard_normal(d)).astype(
                    np.float32
                )
                weights[f"layer{i}.{norm}.beta"] = (0.1 * rng.standard_normal(d)).astype(np.float32)
        weights |= _dense(rng, "head", d, spec.classes)
    else:
        raise TypeError(f"no weights for spec {spec!r}")
    return weights


def make_input(spec: ArchSpec, batch: int, seed: int = 0) -> np.ndarray:
    """A standard-normal float32 input in the spec's neutral layout."""
    rng = seeded_rng(seed, f"input/{spec.name}", batch)
    return rng.standard_normal(spec.input_shape(batch)).astype(np.float32)


# A static quantization's calibration set (fwbench.precisions.INT8_STATIC): batches drawn from
# the inputs' distribution from a stream of their own, so the check's input (make_input) is
# never among them and the accuracy check measures the scales on data they were not fitted to.
# Its seed is its own, not the weights': data, like the inputs, whatever the model; the checks
# job can make the same set again where it must redo a quantization (torch's PT2E).
CALIBRATION_BATCHES = 8
CALIBRATION_BATCH = 16
CALIBRATION_SEED = 0


def make_calibration(spec: ArchSpec) -> list[np.ndarray]:
    """CALIBRATION_BATCHES standard-normal float32 batches of CALIBRATION_BATCH rows, in the
    spec's neutral layout."""
    rng = seeded_rng(CALIBRATION_SEED, f"calibration/{spec.name}", CALIBRATION_BATCH)
    shape = spec.input_shape(CALIBRATION_BATCH)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(CALIBRATION_BATCHES)]


def calibration_settings() -> dict[str, object]:
    """What a manifest records of make_calibration's set."""
    return {
        "batches": CALIBRATION_BATCHES,
        "rows_per_batch": CALIBRATION_BATCH,
        "seed": CALIBRATION_SEED,
        "distribution": "standard normal, the bench and check inputs' own, from a stream of "
        "its own (never the check's input)",
    }
