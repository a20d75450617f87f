"""The analytic cost model: FLOPs and bytes of one forward call, from the spec alone.

Every framework's result is measured against the same numbers, which count exactly the
operations `fwbench.model.reference.forward` performs (every layer of it, nothing else).

FLOP conventions (also in COUNTING_CONVENTIONS, for the report):
- matmul and convolution: 2 FLOPs per multiply-add. A 'same' convolution counts the full
  kernel at every output position (padding zeros included, as frameworks compute them).
  This is `matmul_flops`, the part framework FLOP counters count.
- bias add, residual add, the recurrent sum x@W_ih + h@W_hh: 1 per element.
- ReLU, tanh, exp: 1 per element; sigmoid 4 (negate, exp, add, divide: 1 / (1 + exp(-x)),
  as the reference computes it and XLA counts it).
- 2x2 max-pool: 1 per input element in a pooling window (4 per output; cropped odd
  rows/columns are not compared).
- attention: QK^T and PV are matmuls (above); the 1/sqrt(head_dim) scale 1 per score;
  softmax 5 per score (max, subtract, exp, sum, divide).
- layer norm: 8 per element (mean: sum; variance: subtract, square, sum; normalize:
  subtract, divide; scale, shift) + 4 per row (the two divides of the means, + eps, sqrt).
- LSTM gate math: 18 per hidden unit per step (3 sigmoids, 2 tanh, 3 multiplies, 1 add);
  Elman RNN: 1 (tanh). A reduction over n elements counts n.
- mean-pool over the sequence: 1 per input element + 1 per output element (the divide).

Bytes:
- `bytes` is the compulsory traffic: every weight read once, the input read once, the
  output written once, at `dtype`'s size (float32: 4 bytes; int8: 1-byte weights, 4-byte rest).
- `activation_bytes` is an ESTIMATE of intermediate traffic in an unfused execution: each
  op's output tensor written once and read once. Bias is fused into its matmul, the attention
  scale into QK^T; softmax and layer norm are one op each; an LSTM step's gate math counts
  only its results c and h. The final output is not included (it is in `bytes`).
- `working_set_bytes` is what must stay in one memory level for the call to run from it: the
  weights, the input, the output, and the activations live at once, estimated as the largest
  pair of consecutive op outputs (an op's input and its output). A recurrent layer's op spans
  all steps, so its pair counts the whole sequence's states: an upper estimate there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec

FLOPS_PER_MAC = 2
SOFTMAX_FLOPS_PER_ELEMENT = 5
LAYER_NORM_FLOPS_PER_ELEMENT = 8
LAYER_NORM_FLOPS_PER_ROW = 4
SIGMOID_FLOPS_PER_ELEMENT = 4
LSTM_GATE_FLOPS_PER_UNIT = 3 * SIGMOID_FLOPS_PER_ELEMENT + 2 + 3 + 1
RNN_GATE_FLOPS_PER_UNIT = 1
MAX_POOL_FLOPS_PER_INPUT = 1

DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
# Precisions whose weights and activations differ in width: (weight bytes, activation bytes).
# int8 is dynamic quantization (ONNX Runtime's quantize_dynamic, the TFLite converter's dynamic
# range): int8 weights, float32 activations, input and output (each call's 8-bit copy of a
# product's input is not counted). int8_static (QDQ, LiteRT's full integer) keeps activations
# in int8 between products: counted at 1 byte, its float32 input and output and the ops left
# in float (a transformer's softmax and layer norm) included, so its bytes are a lower bound.
MIXED_WIDTHS = {"int8": (1, 4), "int8_static": (1, 1)}

COUNTING_CONVENTIONS = (
    "FLOPs: 2 per multiply-add (matmul, convolution incl. padding, attention QK^T and PV); "
    "1 per element for bias add, residual add, recurrent sum, ReLU, tanh, exp, the "
    f"attention scale; sigmoid {SIGMOID_FLOPS_PER_ELEMENT} per element; 2x2 max-pool 1 per "
    "compared input element; softmax "
    f"{SOFTMAX_FLOPS_PER_ELEMENT} per element; layer norm {LAYER_NORM_FLOPS_PER_ELEMENT} per "
    f"element + {LAYER_NORM_FLOPS_PER_ROW} per row; LSTM gate math "
    f"{LSTM_GATE_FLOPS_PER_UNIT} per hidden unit per step; mean-pool 1 per input + 1 per "
    "output element; a reduction over n elements counts n. Bytes: weights read once + input "
    "read once + output written once. Activation bytes (an estimate): each op's output "
    "written once and read once, bias fused into its matmul. Working set (an estimate): weights"
    " + input + output + the largest pair of consecutive op outputs."
)


@dataclass(frozen=True)
class Cost:
    """One forward call of one spec at one batch size."""

    flops: int
    matmul_flops: int
    bytes: int
    weight_bytes: int
    activation_bytes: int
    working_set_bytes: int
    arithmetic_intensity: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arithmetic_intensity", self.flops / self.bytes)


@dataclass
class _Tally:
    """Running totals in elements and FLOPs while walking a spec's layers."""

    matmul_flops: int = 0
    other_flops: int = 0
    weight_elements: int = 0
    activation_elements: int = 0
    last_output_elements: int = 0
    live_elements: int = 0  # the largest pair of consecutive op outputs so far

    def _output(self, elements: int) -> None:
        self.activation_elements += elements
        self.live_elements = max(self.live_elements, self.last_output_elements + elements)
        self.last_output_elements = elements

    def dense(self, rows: int, n_in: int, n_out: int) -> None:
        """y = x @ W + b over `rows` rows; W and b are weights."""
        self.matmul_flops += FLOPS_PER_MAC * rows * n_in * n_out
        self.weight_elements += n_in * n_out + n_out
        self.elementwise(rows * n_out)  # bias add; the output is the dense layer's

    def matmul(self, macs: int, output_elements: int) -> None:
        """A matmul of two activations (no weights, no bias)."""
        self.matmul_flops += FLOPS_PER_MAC * macs
        self._output(output_elements)

    def elementwise(self, elements: int, flops_per_element: int = 1) -> None:
        """An op producing a tensor of `elements`."""
        self.other_flops += flops_per_element * elements
        self._output(elements)

    def op(self, flops: int, output_elements: int = 0) -> None:
        """Non-matmul FLOPs; `output_elements` 0 where the result is part of another op's
        output tensor (a fused op)."""
        self.other_flops += flops
        if output_elements:
            self._output(output_elements)

    def relu_dense_stack(self, rows: int, widths: list[int]) -> None:
        """Dense layers through `widths`, ReLU between them, none after the last."""
        layers = list(zip(widths[:-1], widths[1:], strict=True))
        for i, (n_in, n_out) in enumerate(layers):
            self.dense(rows, n_in, n_out)
            if i < len(layers) - 1:
                self.elementwise(rows * n_out)


def _mlp(spec: MLPSpec, batch: int, tally: _Tally) -> None:
    tally.relu_dense_stack(batch, [spec.input, *spec.hidden, spec.classes])


def _cnn(spec: CNNSpec, batch: int, tally: _Tally) -> None:
    cin, height, width = spec.channels, spec.height, spec.width
    for cout in spec.conv_channels:
        positions = batch * height * width
        tally.matmul_flops += FLOPS_PER_MAC * positions * spec.kernel**2 * cin * cout
        tally.weight_elements += spec.kernel**2 * cin * cout + cout
        tally.elementwise(positions * cout)  # bias add: the conv's output
        tally.elementwise(positions * cout)  # ReLU
        height, width = height // 2, width // 2
        pooled = batch * cout * height * width
        tally.op(MAX_POOL_FLOPS_PER_INPUT * 4 * pooled, pooled)
        cin = cout
    channels, height, width = spec.feature_map()
    tally.relu_dense_stack(batch, [channels * height * width, *spec.dense, spec.classes])


def _recurrent(spec: RecurrentSpec, batch: int, tally: _Tally) -> None:
    hidden, gate_width = spec.hidden, spec.gates * spec.hidden
    lstm = spec.cell == "lstm"
    gate_flops = LSTM_GATE_FLOPS_PER_UNIT if lstm else RNN_GATE_FLOPS_PER_UNIT
    n_in = spec.input
    for _ in range(spec.layers):
        tally.weight_elements += n_in * gate_width + hidden * gate_width + gate_width
        steps = spec.seq_len
        tally.matmul_flops += FLOPS_PER_MAC * steps * batch * (n_in + hidden) * gate_width
        tally.elementwise(steps * batch * gate_width, 2)  # z = x@W_ih + h@W_hh + b
        states = 2 if lstm else 1  # c and h, or h
        tally.op(steps * batch * hidden * gate_flops, steps * batch * hidden * states)
        n_in = hidden
    tally.dense(batch, hidden, spec.classes)


def _layer_norm(rows: int, width: int, tally: _Tally) -> None:
    tally.weight_elements += 2 * width
    tally.op(LAYER_NORM_FLOPS_PER_ROW * rows)
    tally.elementwise(rows * width, LAYER_NORM_FLOPS_PER_ELEMENT)


def _transformer(spec: TransformerSpec, batch: int, tally: _Tally) -> None:
    d, seq, heads = spec.d_model, spec.seq_len, spec.heads
    tokens = batch * seq
    scores = batch * heads * seq * seq
    for _ in range(spec.layers):
        for _projection in ("q", "k", "v"):
            tally.dense(tokens, d, d)
        tally.matmul(batch * heads * seq * seq * spec.head_dim, scores)  # QK^T
        tally.op(scores)  # / sqrt(head_dim), into the scores tensor
        tally.elementwise(scores, SOFTMAX_FLOPS_PER_ELEMENT)
        tally.matmul(batch * heads * seq * seq * spec.head_dim, tokens * d)  # PV
        tally.dense(tokens, d, d)  # output projection
        tally.elementwise(tokens * d)  # residual
        _layer_norm(tokens, d, tally)
        tally.dense(tokens, d, spec.ff)
        tally.elementwise(tokens * spec.ff)  # ReLU
        tally.dense(tokens, spec.ff, d)
        tally.elementwise(tokens * d)  # residual
        _layer_norm(tokens, d, tally)
    tally.op(tokens * d)  # mean-pool: the sum
    tally.elementwise(batch * d)  # mean-pool: the divide
    tally.dense(batch, d, spec.classes)


def _input_elements(spec: ArchSpec, batch: int) -> int:
    elements = 1
    for size in spec.input_shape(batch):
        elements *= size
    return elements


def cost(spec: ArchSpec, batch: int, dtype: str = "float32") -> Cost:
    """FLOPs and bytes of one forward call of `spec` on `batch` inputs (see module docstring)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if dtype not in DTYPE_BYTES and dtype not in MIXED_WIDTHS:
        known = ", ".join([*DTYPE_BYTES, *MIXED_WIDTHS])
        raise ValueError(f"unknown dtype {dtype!r}; known: {known}")
    tally = _Tally()
    if isinstance(spec, MLPSpec):
        _mlp(spec, batch, tally)
    elif isinstance(spec, CNNSpec):
        _cnn(spec, batch, tally)
    elif isinstance(spec, RecurrentSpec):
        _recurrent(spec, batch, tally)
    elif isinstance(spec, TransformerSpec):
        _transformer(spec, batch, tally)
    else:
        raise TypeError(f"no cost model for spec {spec!r}")
    weight_item, item = MIXED_WIDTHS.get(dtype) or (DTYPE_BYTES[dtype],) * 2
    output_elements = batch * spec.classes
    weight_bytes = tally.weight_elements * weight_item
    io_elements = _input_elements(spec, batch) + output_elements
    return Cost(
        flops=tally.matmul_flops + tally.other_flops,
        matmul_flops=tally.matmul_flops,
        bytes=weight_bytes + io_elements * item,
        weight_bytes=weight_bytes,
        # the head's output is the call's output, already in `bytes`
        activation_bytes=2 * (tally.activation_elements - output_elements) * item,
        working_set_bytes=weight_bytes + (io_elements + tally.live_elements) * item,
    )
