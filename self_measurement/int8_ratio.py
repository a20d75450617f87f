"""The hardware stage's int8 GEMM peak against the int8 GEMM rates other paths reach.

The stage's peak is the best of torch._int_mm, jax's int8 dot and ONNX Runtime's
MatMulInteger over its size sweep (fwbench.hardware.compute). The other paths here are the
int8 GEMMs a user reaches without those calls: ONNX Runtime's QLinearMatMul (the QOperator
format's matmul, requantized to uint8), its MatMulIntegerToFloat (what dynamic quantization
writes: int8 GEMM, then scaled to float32), and torch's quantized Linear on the x86 engine
(uint8 activations, int8 weights). Each runs in a child process of its own, on the same
threads, sizes swept; the stage and the other paths alternate for `--rounds` rounds under the
host's timing lock and each keeps its best. Prints every rate and stage ÷ best other; exits 1
when that is below --min-ratio (the project's goal: 0.9).

    .venv/bin/python self_measurement/int8_ratio.py --threads 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from fwbench.hardware.compute import measure_gemms
from fwbench.host.harness import timing_lock
from fwbench.host.threads import affinity_cores, setup_threads

OTHERS = ("onnxrt-qlinearmatmul", "onnxrt-matmulintegertofloat", "torch-qlinear")
SIZES = (256, 512, 1024, 1536, 2048, 3072, 4096)


def _best_rate(call, n: int, trials: int) -> float:
    call()  # untimed first call (kernel generation, packing)
    best = min(_timed(call) for _ in range(trials))
    return 2 * n**3 / best


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _onnxrt(kind: str, n: int, threads: int):
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    scale = helper.make_tensor("s", TensorProto.FLOAT, [], [0.05])
    a_zero = helper.make_tensor("za", TensorProto.UINT8, [], [128])
    b_zero = helper.make_tensor("zb", TensorProto.INT8, [], [0])
    if kind == "onnxrt-qlinearmatmul":
        node = helper.make_node("QLinearMatMul", ["a", "s", "za", "b", "s", "zb", "s", "za"], ["y"])
        out_type, domain = TensorProto.UINT8, []
    else:
        node = helper.make_node(
            "MatMulIntegerToFloat", ["a", "b", "s", "s", "za", "zb"], ["y"], domain="com.microsoft"
        )
        out_type, domain = TensorProto.FLOAT, [helper.make_opsetid("com.microsoft", 1)]
    graph = helper.make_graph(
        [node],
        "int8",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [n, n]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [n, n]),
        ],
        [helper.make_tensor_value_info("y", out_type, [n, n])],
        initializer=[scale, a_zero, b_zero],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), *domain], ir_version=10
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(model.SerializeToString(), options)
    rng = np.random.default_rng(0)
    feed = {
        "a": rng.integers(0, 256, (n, n), dtype=np.uint8),
        "b": rng.integers(-128, 128, (n, n), dtype=np.int8),
    }
    return lambda: session.run(None, feed)


def _torch_qlinear(n: int, threads: int):
    import torch

    torch.set_num_threads(threads)
    torch.backends.quantized.engine = "x86"
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(n, n, generator=generator)
    linear = torch.ao.nn.quantized.Linear(n, n, bias_=False)
    linear.set_weight_bias(torch.quantize_per_tensor(weight, 0.01, 0, torch.qint8), None)
    x = torch.quantize_per_tensor(torch.randn(n, n, generator=generator), 0.05, 128, torch.quint8)

    def call():
        with torch.inference_mode():
            linear(x)

    return call


def child(kind: str, threads: int, trials: int) -> dict[str, float]:
    """In the child process: the path's best rate per size."""
    rates = {}
    for n in SIZES:
        call = _torch_qlinear(n, threads) if kind == "torch-qlinear" else _onnxrt(kind, n, threads)
        rates[str(n)] = _best_rate(call, n, trials)
    return rates


def other_rates(kind: str, threads: int, trials: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", kind, "--threads", str(threads)]
    command += ["--trials", str(trials)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def stage_rate(threads: int, trials: int) -> tuple[float, str, int]:
    """The hardware stage's int8 sweep (its runners, its size rule), as the stage runs it."""
    settings = {
        "gemm_min_n": 256,
        "gemm_max_n": SIZES[-1],
        "gemm_trials": trials,
        "gemm_tolerance": 0.02,
        "dtypes": ["int8"],
    }
    compute, _ = measure_gemms(
        ["torch", "jax"], settings, {"int8": None}, "cpu", threads, sys.stderr, ("onnxrt",)
    )
    entry = compute["dtypes"]["int8"]
    return entry["best_flops_per_s"], entry["best_framework"], entry["best_n"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=affinity_cores())
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--min-ratio", type=float, default=0.9)
    parser.add_argument("--lock", default="/tmp/fwbench-timing.lock")
    parser.add_argument("--child", choices=OTHERS, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.threads, args.trials)))
        return 0
    setup_threads(args.threads)
    stage, others = (0.0, "", 0), {kind: (0.0, 0) for kind in OTHERS}
    with timing_lock(args.lock):
        for _ in range(args.rounds):
            stage = max(stage, stage_rate(args.threads, args.trials))
            for kind in OTHERS:
                rate, n = max(
                    (r, int(n)) for n, r in other_rates(kind, args.threads, args.trials).items()
                )
                others[kind] = max(others[kind], (rate, n))
    print(f"threads {args.threads}; int8 operations per second (2 per multiply-add)")
    print(f"  stage  {stage[0] / 1e9:9.1f} G  ({stage[1]} at n={stage[2]})")
    for kind, (rate, n) in others.items():
        print(f"  other  {rate / 1e9:9.1f} G  ({kind} at n={n})")
    best = max(rate for rate, _ in others.values())
    ratio = stage[0] / best
    print(f"stage ÷ best other = {ratio:.3f} (goal ≥ {args.min_ratio})")
    return 0 if ratio >= args.min_ratio else 1


if __name__ == "__main__":
    raise SystemExit(main())
