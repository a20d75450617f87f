"""Did a low-precision cell compute in its precision? The evidence each adapter finds, reduced
to one record: the share of the cell's work whose floating-point inputs are all in the cell's
dtype, the dtypes the rest ran in, and the casts inserted.

Where the work is measured differs by what each framework lets one see, and the record says
which (`basis`): kernel time where a profiler names each kernel's input dtypes (torch), FLOP
of the matrix products where only the compiled program says what they compute in (XLA's
optimized HLO for jax and TensorFlow's XLA mode, TensorFlow's graph ops). `coverage` is the
share of the basis the evidence could type (inductor's generated kernels, say, carry no
dtype). The adapters call `of_work`; a framework-free parser of XLA's HLO text is here too, as
jax and TensorFlow both print it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

# Below this share of its work in its own dtype a low-precision cell is flagged: it mostly
# computed in another (an upcast, a fallback kernel).
UPCAST_BELOW = 0.5
# Calls a profiler watches for the evidence (after the timed samples; warm by then).
KERNEL_PRECISION_CALLS = 3
KERNEL_TIME, FLOP = "kernel time", "FLOP"


@dataclass(frozen=True)
class KernelPrecision:
    """`shares`: dtype (as the framework names it) -> its share of the typed work; `low` the
    cell's dtype in those names; `coverage` the typed work's share of all of it."""

    low: str
    shares: dict[str, float]
    basis: str
    method: str
    casts: int = 0
    coverage: float = 1.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def share(self) -> float:
        """The low dtype's share of the typed work; NaN where nothing was typed."""
        return self.shares.get(self.low, 0.0) if self.shares else math.nan

    def upcast(self) -> bool:
        return self.share < UPCAST_BELOW  # NaN: not flagged (nothing seen), said in the note

    def ran_instead(self) -> str:
        """The other dtypes and their shares, largest first ('' if none)."""
        others = sorted(((s, d) for d, s in self.shares.items() if d != self.low), reverse=True)
        return ", ".join(f"{dtype} {share:.0%}" for share, dtype in others if share > 0)

    def note(self) -> str:
        if not self.shares:
            seen = f"nothing typed in the {self.basis}"
        else:
            seen = f"{self.low} {self.share:.0%} of the typed {self.basis}"
            if self.ran_instead():
                seen += f" (ran instead: {self.ran_instead()})"
        coverage = f", {self.coverage:.0%} of it typed" if self.coverage < 1 else ""
        return "; ".join([f"{seen}{coverage}, {self.casts} casts", self.method, *self.notes])


def of_work(
    work: Iterable[tuple[str, float]],
    low: str,
    basis: str,
    method: str,
    casts: int = 0,
    untyped: float = 0.0,
    notes: tuple[str, ...] = (),
) -> KernelPrecision:
    """From (dtype, amount) pairs of typed work and the amount seen without a dtype."""
    totals: Counter[str] = Counter()
    for dtype, amount in work:
        totals[dtype] += amount
    typed = sum(totals.values())
    shares = {dtype: amount / typed for dtype, amount in totals.items()} if typed > 0 else {}
    coverage = typed / (typed + untyped) if typed + untyped > 0 else 0.0
    return KernelPrecision(low, shares, basis, method, casts, coverage, notes)


# ---- XLA's HLO text ------------------------------------------------------------------------

_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<type>[a-z]\w*)\[(?P<shape>[\d,]*)\]\S*\s+"
    r"(?P<op>[\w\-]+)\((?P<operands>[^)]*)\)(?P<rest>.*)$"
)
_CONTRACTING = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
_DIM_LABELS = re.compile(r"dim_labels=\w+_(\w+)->")
# HLO's element types, named as fwbench names precisions.
HLO_TYPES = {"f64": "float64", "f32": "float32", "bf16": "bfloat16", "f16": "float16", "s8": "int8"}
FLOAT_TYPES = ("float64", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class _Value:
    dtype: str
    shape: tuple[int, ...]


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",") if d)


def _operand_names(text: str) -> list[str]:
    """`%a, %b` or, as older XLA prints them, `f32[8,16]{1,0} %a, ...`; names without `%`
    where a printer leaves it out."""
    named = re.findall(r"%([\w.\-]+)", text)
    return named or [part.split()[-1] for part in text.split(",") if part.strip()]


def _product_flops(op: str, out: _Value, operands: list[_Value], rest: str) -> float:
    """2 × output elements × the reduction length of a dot or convolution."""
    outputs = math.prod(out.shape)
    if op == "dot":
        match = _CONTRACTING.search(rest)
        dims = [int(d) for d in match.group(1).split(",") if d] if match else []
        return 2.0 * outputs * math.prod(operands[0].shape[d] for d in dims)
    labels = _DIM_LABELS.search(rest)
    kernel = operands[1].shape
    features = kernel[labels.group(1).index("o")] if labels else 1
    return 2.0 * outputs * math.prod(kernel) / max(features, 1)


def of_hlo(text: str, low: str, method: str, notes: tuple[str, ...] = ()) -> KernelPrecision:
    """The FLOP of an optimized HLO module's dots and convolutions by their operands' dtype."""
    products, casts = hlo_products(text)
    return of_work(products, low, FLOP, method, casts, notes=notes)


def hlo_products(text: str) -> tuple[list[tuple[str, float]], int]:
    """Every dot and convolution of an HLO module as (its operands' dtype, FLOP), and the
    converts between floating types. An operand's dtype comes from its defining instruction
    in the same computation; operands of two dtypes read 'a×b'."""
    products: list[tuple[str, float]] = []
    casts = 0
    values: dict[str, _Value] = {}
    for line in text.splitlines():
        if line.rstrip().endswith("{"):  # a computation starts: its own names
            values = {}
            continue
        match = _INSTRUCTION.match(line)
        if not match:
            continue
        out = _Value(HLO_TYPES.get(match["type"], match["type"]), _shape(match["shape"]))
        values[match["name"]] = out
        names = _operand_names(match["operands"])
        if match["op"] == "convert" and names and names[0] in values:
            casts += int(out.dtype in FLOAT_TYPES and values[names[0]].dtype in FLOAT_TYPES)
        if match["op"] in ("dot", "convolution") and all(n in values for n in names[:2]):
            operands = [values[name] for name in names[:2]]
            dtype = "×".join(dict.fromkeys(value.dtype for value in operands))
            products.append((dtype, _product_flops(match["op"], out, operands, match["rest"])))
    return products, casts


# ---- oneDNN's verbose log ------------------------------------------------------------------

# oneDNN's memory-descriptor data types, named as fwbench names precisions (u8 and s8 are both
# an integer product's operand).
ONEDNN_TYPES = {
    "f32": "float32",
    "bf16": "bfloat16",
    "f16": "float16",
    "f64": "float64",
    "u8": "int8",
    "s8": "int8",
}
ONEDNN_PRODUCTS = ("convolution", "deconvolution", "inner_product", "matmul", "rnn")
# `src:u8::...` (oneDNN 3), `src_u8::...` (2), an RNN's `src_layer:f32::...`
_ONEDNN_SOURCE = re.compile(r"(?:^|\s)src(?:_layer)?[:_]([a-z0-9]+)")
_ONEDNN_DESTINATION = re.compile(r"(?:^|\s)dst(?:_layer)?[:_]([a-z0-9]+)")


def onednn_executions(log: str) -> list[tuple[str, str, str, str, float]]:
    """Each primitive execution a oneDNN verbose log holds (ONEDNN_VERBOSE=1, oneDNN 3's
    `onednn_verbose,v1,primitive,exec,cpu,<kind>,<implementation>,<propagation>,<memory
    descriptors>,...,<time ms>`): (kind, implementation, source dtype, destination dtype, ms)."""
    found = []
    for line in log.splitlines():
        fields = line.strip().split(",")
        if not fields[0].endswith("_verbose") or "exec" not in fields[:5]:
            continue
        at = fields.index("exec")
        if len(fields) < at + 6 or fields[at + 1] != "cpu":
            continue
        kind, implementation, descriptors = fields[at + 2], fields[at + 3], fields[at + 5]
        source, destination = (
            _ONEDNN_SOURCE.search(descriptors),
            _ONEDNN_DESTINATION.search(descriptors),
        )
        try:
            ms = float(fields[-1])
        except ValueError:
            continue
        named = [
            ONEDNN_TYPES.get(m.group(1), m.group(1)) if m else "" for m in (source, destination)
        ]
        found.append((kind, implementation, *named, ms))
    return found


def of_onednn_log(log: str, low: str, calls: int) -> KernelPrecision:
    """A verbose log over `calls` calls: the time of oneDNN's products by their source's
    dtype, its reorders that change the dtype counted as casts, the implementations (which
    name the ISA: `brg_conv_fwd:avx512_core_amx`) in the notes."""
    executions = onednn_executions(log)
    work = [(src, ms) for kind, _, src, _, ms in executions if kind in ONEDNN_PRODUCTS]
    casts = sum(1 for kind, _, src, dst, _ in executions if kind == "reorder" and src != dst)
    used = dict.fromkeys(impl for kind, impl, *_ in executions if kind in ONEDNN_PRODUCTS)
    method = (
        f"oneDNN's verbose log over {calls} calls: its products' execution time by their "
        "source's dtype; work outside oneDNN (inductor's generated kernels, MKL's GEMMs) unseen"
    )
    notes = (f"oneDNN implementations: {', '.join(used) or 'none'}",)
    return of_work(work, low, KERNEL_TIME, method, casts // max(calls, 1), notes=notes)
