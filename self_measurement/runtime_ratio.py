"""An export mode's cell median against a minimal loop written in the runtime's own API.

For each export-mode cell file given (or, with --results, one cell per export mode found there:
--arch's cell at --batch, by default the smallest batch measured in the most processes), this
loads the cell's artifact with the runtime's own API, not fwbench's runner, times it on the
cell's threads and cores, and prints the cell's median (the median over the cell's processes,
with their range, where the config ran several), the median of the loop's fresh processes
(--processes, 5) with their range, and the ratio (goal 0.90–1.10):

    .venv/bin/python self_measurement/runtime_ratio.py --results results --arch mlp

Each cell is measured in a fresh process of its own (this script again, with --cell), so one
runtime's thread pools and allocator never share a process with another's. The loop: the
runtime's load call, WARMUP calls, then BLOCKS blocks of as many calls as take about
BLOCK_S, each block's time over its calls; the median of the blocks. The input is the cell's
seeded input in the artifact's layout. Holds the workstation timing lock while timing.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fwbench.host.harness import timing_lock
from fwbench.host.threads import setup_threads
from fwbench.io.cell_file import read_cell

WARMUP, BLOCKS, BLOCK_S = 50, 30, 0.02
EXPORT_MODES = {"aoti", "export", "onnxrt", "litert"}
GOAL = (0.90, 1.10)


def _cell_facts(path: str) -> dict[str, Any]:
    ds = read_cell(path)
    threads = json.loads(ds.attrs["threads"])["threads"]
    return {
        "framework": ds.attrs["framework"],
        "mode": ds.attrs["mode"],
        "arch": ds.attrs["arch"],
        "batch": int(ds.attrs["batch"]),
        "artifact": ds.attrs.get("artifact", ""),
        "threads": threads,
        "median_s": statistics.median(_process_medians(path)),
        "process_medians_s": _process_medians(path),
        "dims": json.loads(ds.attrs["dims"]),
    }


def _process_medians(path: str) -> list[float]:
    """The cell's median in each of its processes (`b1.nc`, `b1-p1.nc`, ...): one process is
    one draw from the between-process spread, as one loop process is."""
    return [float(np.nanmedian(read_cell(p)["latency_s"].values)) for p in _process_paths(path)]


def _process_paths(path: str) -> list[str]:
    first = Path(path)
    return [path, *map(str, sorted(first.parent.glob(f"{first.stem}-p*.nc")))]


def _input(facts: dict[str, Any], shape: list[int | None]) -> np.ndarray:
    """The cell's seeded neutral input, put in the artifact's layout."""
    from fwbench.model.specs import build_spec
    from fwbench.model.weights import make_input
    from fwbench.runtimes.layout import permutation

    spec = build_spec(facts["arch"], facts["dims"])
    x = make_input(spec, facts["batch"])
    return np.ascontiguousarray(x.transpose(permutation(x.shape, shape)))


def _onnxrt(facts: dict[str, Any]) -> Callable[[], Any]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = facts["threads"], 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(facts["artifact"], options, providers=["CPUExecutionProvider"])
    (arg,) = session.get_inputs()
    feed = {arg.name: _input(facts, [d if isinstance(d, int) else None for d in arg.shape])}
    return lambda: session.run(None, feed)


def _litert(facts: dict[str, Any]) -> Callable[[], Any]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=facts["artifact"], num_threads=facts["threads"])
    (arg,) = interpreter.get_input_details()
    x = _input(facts, [int(d) if d >= 0 else None for d in arg["shape_signature"]])
    interpreter.resize_tensor_input(arg["index"], list(x.shape))
    interpreter.allocate_tensors()
    interpreter.set_tensor(arg["index"], x)
    out = interpreter.get_output_details()[0]["index"]

    def call() -> Any:
        interpreter.invoke()
        return interpreter.get_tensor(out)

    return call


def _aoti(facts: dict[str, Any]) -> Callable[[], Any]:
    import torch

    torch.set_num_threads(facts["threads"])
    model = torch._inductor.aoti_load_package(facts["artifact"])
    x = torch.from_numpy(_input(facts, _neutral_shape(facts)))

    def call() -> Any:
        with torch.inference_mode():
            return model(x)

    return call


def _jax_export(facts: dict[str, Any]) -> Callable[[], Any]:
    import jax
    from jax import export

    with open(facts["artifact"], "rb") as handle:
        exported = export.deserialize(bytearray(handle.read()))
    shape = [d if isinstance(d, int) else None for d in exported.in_avals[0].shape]
    x = jax.device_put(_input(facts, shape))
    call = jax.jit(exported.call)
    return lambda: call(x).block_until_ready()


def _neutral_shape(facts: dict[str, Any]) -> list[None]:
    """A torch artifact takes the neutral layout: every axis as it is."""
    from fwbench.model.specs import build_spec

    spec = build_spec(facts["arch"], facts["dims"])
    return [None] * len(spec.input_shape(1))


LOOPS: dict[str, Callable[[dict[str, Any]], Callable[[], Any]]] = {
    "onnxrt": _onnxrt,
    "litert": _litert,
    "aoti": _aoti,
    "export": _jax_export,
}


def _time(call: Callable[[], Any]) -> float:
    for _ in range(WARMUP):
        call()
    start = time.perf_counter()
    for _ in range(WARMUP):
        call()
    per_call = (time.perf_counter() - start) / WARMUP
    calls = max(1, round(BLOCK_S / per_call))
    blocks = []
    for _ in range(BLOCKS):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        blocks.append((time.perf_counter() - start) / calls)
    return statistics.median(blocks)


def measure_one(path: str, lock: str) -> dict[str, Any]:
    facts = _cell_facts(path)
    setup_threads(facts["threads"])
    call = LOOPS[facts["mode"]](facts)
    with timing_lock(lock):
        loop_s = _time(call)
    return facts | {"loop_s": loop_s, "ratio": facts["median_s"] / loop_s}


def one_per_mode(results: str, arch: str, batch: int | None) -> list[str]:
    """Per (framework, export mode), `arch`'s process-0 cell at `batch`; with no batch, the
    smallest batch among those measured in the most processes."""
    found: dict[tuple[str, str], tuple[tuple[int, int], str]] = {}
    for path in glob.glob(f"{results}/cells/*/*/*/*/{arch}/b*.nc"):
        parts, stem = Path(path).parts, Path(path).stem
        if "-p" in stem or parts[-3] not in EXPORT_MODES:
            continue
        if (batch is not None and stem != f"b{batch}") or read_cell(path).attrs["status"] != "ok":
            continue
        key = (-len(_process_paths(path)), int(stem[1:]))
        mode = parts[-5], parts[-3]
        found[mode] = min(found.get(mode, (key, path)), (key, path))
    return [path for _, path in sorted(found.values(), key=lambda kp: kp[1])]


def _loop_processes(path: str, lock: str, processes: int) -> list[dict[str, Any]] | None:
    """The own-API loop of one cell in `processes` fresh processes, one after another: a
    process's own start (allocator, thread placement) moves a loop by 10-40% on a small VM,
    so one process per side cannot resolve a 10% ratio. None (and why, printed) on failure."""
    rows = []
    for _ in range(processes):
        command = [sys.executable, __file__, "--cell", path, "--lock", lock]
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            print(f"{path}: the loop failed:\n{run.stderr[-2000:]}")
            return None
        rows.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", nargs="*", help="export-mode cell files")
    parser.add_argument("--results", help="take one cell per export mode from this results/")
    parser.add_argument("--arch", default="mlp", help="with --results: the architecture")
    parser.add_argument(
        "--batch",
        type=int,
        help="with --results: the batch (default: the smallest measured in the most processes)",
    )
    parser.add_argument("--cell", help=argparse.SUPPRESS)  # one measurement, in this process
    parser.add_argument("--lock", default="/tmp/fwbench-timing.lock")
    parser.add_argument("--processes", type=int, default=5, help="fresh loop processes per cell")
    args = parser.parse_args()
    if args.cell:
        print(json.dumps(measure_one(args.cell, args.lock)))
        return 0
    found = one_per_mode(args.results, args.arch, args.batch) if args.results else []
    cells = list(args.cells) + found
    if not cells:
        raise SystemExit("no export-mode cells given or found")
    within = True
    header = f"{'cell':28} {'threads':>7} {'cell µs [processes]':>26} {'loop µs [range]':>24}"
    print(f"{header} {'ratio':>6}")
    for path in cells:
        rows = _loop_processes(path, args.lock, args.processes)
        if rows is None:
            within = False
            continue
        loops = [row["loop_s"] * 1e6 for row in rows]
        loop, row = statistics.median(loops), rows[0]
        ratio = row["median_s"] * 1e6 / loop
        name = f"{row['framework']}/{row['mode']}/{row['arch']}/b{row['batch']}"
        spread = f"{loop:.1f} [{min(loops):.1f}, {max(loops):.1f}]"
        cells = [m * 1e6 for m in row["process_medians_s"]]
        cell = f"{row['median_s'] * 1e6:.1f} [{min(cells):.1f}, {max(cells):.1f}]x{len(cells)}"
        print(f"{name:28} {row['threads']:7d} {cell:>26} {spread:>24} {ratio:6.3f}")
        within &= GOAL[0] <= ratio <= GOAL[1]
    print(f"goal: every ratio within {GOAL[0]:.2f}–{GOAL[1]:.2f}: {'met' if within else 'NOT met'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
