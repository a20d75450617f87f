"""How far a model computed in a low precision may be from the float64 reference: a
probabilistic rounding-error bound per architecture, with its derivation (the equivalence
checks hold each low-precision mode and artifact against it, fwbench.measure.checks).

The model of rounding (Higham & Mary, "A new approach to probabilistic rounding error
analysis", SISC 2019): every rounding multiplies a value by (1 + δ) with |δ| ≤ u, the δ
independent and of mean zero. A network in bfloat16 (u = 2^-8) rounds its weights when cast,
each operation's result when stored, and accumulates its inner products in float32 (the bf16
GEMM and convolution kernels of oneDNN, Eigen and XLA's CPU backend all do): the accumulation's
own error, λ√n·u_fp32 for an inner product of length n, is below 1e-5 at these widths, so what
remains is the R roundings in bfloat16 on the model's longest path. Each shifts the output by
at most u of its scale; layers pass a relative error on with gain at most 1 (ReLU, tanh,
sigmoid and softmax contract, layer norm renormalizes, the weights are scaled to keep the
activations' size); so by Hoeffding's inequality the normwise relative error of one output
exceeds λ·u·√R with probability at most 2·exp(−λ²/2). Over the m = batch × classes outputs
(a union bound) at a failure probability η = 1e-3: λ = √(2·ln(2m/η)).

The bound is λ·u·√R. It is not the worst case (R·u, or n·u with bf16 accumulation, which is
useless at these widths); a kernel that accumulates in bfloat16 adds λ√n·u and exceeds it,
which is an accuracy cost the check then marks. For the recurrent nets the gain-1 assumption
over every time step makes the bound loose (a tanh recurrence forgets early errors).

A quantized model (int8, int8_static) rounds differently: each operand of an integer product
(a weight tensor, a call's activations) is rounded to a multiple of its own scale s, an error
of at most s/2 per value, and the product is exact in int32; a static model also rounds each
product's output and the other ops' outputs it keeps in 8 bits (a data move's output on its
input's grid rounds nothing: `moves_data`). An activation beyond its calibrated range is
clipped, an error this bound does not cover: the check's error shows it, and the check counts
the stored activations at a limit of their integer range (`Roundings.saturated`). Relative to the
operand's rms the rounding is c = (s/2) / rms = 1 / (2·rms(q − zero point)) for the integers q
it was rounded to, read from the artifact's weights and, for activations, from the quantized
values at the check's input (fwbench.runtimes' quantization_roundings). With the same model
(independent, mean-zero errors, gain at most 1), Hoeffding's inequality over the K roundings
gives λ·√(Σ c²), the same form as λ·u·√R with u the roundings' rms c. Operators left in
float32 add nothing measurable. Over many roundings (a transformer's or an unrolled
recurrence's static quantization) the gain-1 assumption makes the bound loose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.precisions import BFLOAT16

# Unit roundoff of each low precision: 2^-p for p significand bits (bfloat16: 8).
UNIT_ROUNDOFF = {BFLOAT16: 2.0**-8}
FAILURE_PROBABILITY = 1e-3  # η: the chance a correct path exceeds its bound
# Roundings in the low precision per stage of each kind (the elementwise ops a framework may
# run unfused each round their result; counted so, an upper count for fused kernels):
DENSE = 4  # weights cast, GEMM result stored, bias add, activation
RNN_STEP = 5  # two GEMMs (input and hidden), their sum, bias, tanh
LSTM_STEP = 12  # two GEMMs, sum, bias, three sigmoids, two tanh, c = f·c + i·g (two), h = o·tanh
ATTENTION_LAYER = 20  # QKV GEMM + bias, scores, scale, softmax (3), PV, out GEMM + bias,
# residual, layer norm (2), ff1 + bias + ReLU, ff2 + bias, residual, layer norm (2)


@dataclass(frozen=True)
class Bound:
    """The bound of one model in one precision, and how it was derived."""

    value: float
    roundings: int
    unit_roundoff: float
    lam: float
    quantized: bool = False  # u is the roundings' rms relative step, read from the scales

    def basis(self) -> str:
        """One line saying how the bound was made."""
        if self.quantized:
            return (
                f"λ·√(Σc²) = {self.lam:.2f} × {self.unit_roundoff:.2g} × √{self.roundings} "
                f"(K = {self.roundings} roundings to integers, c = step/2 over the operand's "
                f"rms, from the artifact's scales at the check input, int32 accumulation, "
                f"η = {FAILURE_PROBABILITY:g}; fwbench.model.precision_bound)"
            )
        return (
            f"λ·u·√R = {self.lam:.2f} × 2^{math.log2(self.unit_roundoff):.0f} × "
            f"√{self.roundings} (R roundings on the longest path, float32 accumulation, "
            f"η = {FAILURE_PROBABILITY:g}; fwbench.model.precision_bound)"
        )


def roundings(spec: ArchSpec) -> int:
    """R: the roundings in the low precision on the model's longest path."""
    if isinstance(spec, MLPSpec):
        return DENSE * (len(spec.hidden) + 1)
    if isinstance(spec, CNNSpec):
        return DENSE * (len(spec.conv_channels) + len(spec.dense) + 1)
    if isinstance(spec, RecurrentSpec):
        step = LSTM_STEP if spec.cell == "lstm" else RNN_STEP
        return step * spec.layers * spec.seq_len + DENSE
    if isinstance(spec, TransformerSpec):
        return ATTENTION_LAYER * spec.layers + DENSE
    raise TypeError(f"no rounding count for spec {spec!r}")


def _lam(outputs: int) -> float:
    """λ: the union bound over `outputs` values at the failure probability η."""
    if outputs < 1:
        raise ValueError(f"outputs must be positive, got {outputs!r}")
    return math.sqrt(2 * math.log(2 * outputs / FAILURE_PROBABILITY))


def rounding_step(centred: Any) -> float:
    """c of one rounding to integers: half a step over the rms of what was rounded, in steps
    (`centred`: the operand divided by its step, less its zero point) = 1 / (2·rms)."""
    values = np.asarray(centred, np.float64)
    rms = float(np.sqrt(np.mean(values**2)))
    return 1.0 / (2.0 * rms) if rms > 0 else 0.0  # all at the zero point: rounded exactly


def integer_step(q: Any, zero: Any = 0.0, axis: int | None = None) -> float:
    """c of a tensor rounded to the integers `q` (any array: numpy, torch) with zero point
    `zero`: one, none (an empty array: 0), or one per channel along `axis`."""
    values = np.asarray(q, np.float64)
    zero = np.asarray(zero, np.float64)
    if zero.size > 1:
        if axis is None:
            raise ValueError(f"{zero.size} zero points but no axis they run along")
        zero = zero.reshape([-1 if a == axis % values.ndim else 1 for a in range(values.ndim)])
    else:
        zero = zero.reshape(()) if zero.size else np.zeros(())
    return rounding_step(values - zero)


def saturated(q: Any, zero: Any, low: int, high: int) -> int:
    """How many of the integers `q` (an activation a static quantization stored in [low, high],
    zero point `zero`, one) sit at a limit that is not the zero point: clipped at the
    calibrated range, or within half a step of its edge. A limit at the zero point holds exact
    zeros (a ReLU's), not clipped values."""
    values = np.asarray(q, np.int64)
    points = np.asarray(zero, np.float64).reshape(-1)
    zero_point = int(points[0]) if points.size else 0
    limits = [limit for limit in (int(low), int(high)) if limit != zero_point]
    return int(sum(np.count_nonzero(values == limit) for limit in limits))


@dataclass
class Roundings:
    """What a quantized model rounds to integers at one input: each rounding's c (the bound's
    steps, `quantization_bound`), and over the activations a static quantization stores (its
    ranges fixed by calibration) how many values sat at a limit of their integer range
    (`saturated`) of how many were stored (`stored`): the clipping the bound does not cover.
    A dynamic quantization takes each range from the call itself and stores none (0 of 0)."""

    steps: list[float] = field(default_factory=list)
    saturated: int = 0
    stored: int = 0

    def weight(self, q: Any, zero: Any = 0.0, axis: int | None = None) -> None:
        """A weight (or a dynamic quantization's operand) rounded to `q`: its step only."""
        self.steps.append(integer_step(q, zero, axis))

    def activation(self, q: Any, zero: Any, low: int, high: int) -> None:
        """A static quantization's stored activation `q` in [low, high]: its step, and its
        values at a limit."""
        values = np.asarray(q)  # numpy's, or a framework's tensor
        self.steps.append(integer_step(values, zero))
        self.saturated += saturated(values, zero, low, high)
        self.stored += int(values.size)


def integer_limits(dtype: Any) -> tuple[int, int]:
    """The range of an integer dtype (numpy's name or object: uint8, int8)."""
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def quantization_bound(steps: Sequence[float], outputs: int) -> Bound:
    """The normwise relative error a quantized model may show over `outputs` values, from
    each rounding's relative step c (the module's docstring derives it); raises on none."""
    if not steps or not all(math.isfinite(c) and c >= 0 for c in steps):
        raise ValueError(f"a quantization bound needs finite steps ≥ 0, got {list(steps)!r}")
    rms = math.sqrt(sum(c * c for c in steps) / len(steps))
    lam = _lam(outputs)
    return Bound(lam * rms * math.sqrt(len(steps)), len(steps), rms, lam, quantized=True)


def error_bound(spec: ArchSpec, precision: str, outputs: int) -> Bound:
    """The normwise relative error `spec` may show in `precision` over `outputs` values
    (batch × classes); raises naming a precision without a unit roundoff here."""
    if precision not in UNIT_ROUNDOFF:
        known = ", ".join(UNIT_ROUNDOFF)
        raise ValueError(f"no rounding-error bound for precision {precision!r}; known: {known}")
    u, count = UNIT_ROUNDOFF[precision], roundings(spec)
    lam = _lam(outputs)
    return Bound(lam * u * math.sqrt(count), count, u, lam)


# Ops that move values without computing: a static quantization quantizes their output again
# at their input's scale and zero point (ORT's QDQ, LiteRT's full integer, torch's PT2E share
# the input's parameters there), which rounds a value already on that grid, exactly: not a
# rounding of the bound. Named as each format names them, normalized (`moves_data`).
DATA_MOVES = frozenset(
    {"transpose", "permute", "reshape", "view", "squeeze", "unsqueeze", "flatten", "identity"}
    | {"maxpool", "slice", "gather", "expand", "split", "clone", "contiguous"}
)


def moves_data(op: str) -> bool:
    """Whether an op (ONNX `MaxPool`, TFLite `MAX_POOL_2D`, aten `max_pool2d`) only moves
    values (DATA_MOVES)."""
    name = op.lower().replace("_", "")
    return name.rstrip("123d") in DATA_MOVES or name in DATA_MOVES
