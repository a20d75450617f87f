"""An export mode's cell median against a minimal loop written in the runtime's own API.

For each export-mode cell file given (or, with --results, one cell per export mode found there:
--arch's cell at --batch, by default the smallest batch measured in the most processes), this
loads the cell's artifact with the runtime's own API, not fwbench's runner, times it on the
cell's threads and cores, and prints two ratios (goal 0.90–1.10):

- back to back (the goal's): --rounds rounds (11: with 5, one noisy round moved a ratio by
  0.1 on a 2-core VM), each a fresh process running the cell's bench
  job (workflow/scripts/bench.py with the request the default config plans for it, the sweep's
  hardware file and artifact) and a fresh loop process, one after the other; the median of the
  cell processes over the median of the loop processes. Both sides meet the machine in the same
  minutes: on a shared VM the speed of the last-level cache moves by up to 1.4× for seconds at
  a time (the canary's read factor), and a cell measured an hour earlier met another machine;
- against the sweep: the cell file's median over its processes, with the canary's read factor
  of each process, over the loop's median.

    .venv/bin/python self_measurement/runtime_ratio.py --results results --arch mlp

Each side runs in fresh processes of its own, so one runtime's thread pools and allocator never
share a process with another's. The loop: the runtime's load call, WARMUP calls, then BLOCKS
blocks of as many calls as take about BLOCK_S, each block's time over its calls; the median of
the blocks. The input is the cell's seeded input in the artifact's layout. Holds the
workstation timing lock while timing; run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from configured import REPO, request_for

from fwbench.host.harness import timing_lock
from fwbench.host.threads import setup_threads
from fwbench.io.cell_file import read_cell
from fwbench.plan import paths

WARMUP, BLOCKS, BLOCK_S = 50, 30, 0.02
EXPORT_MODES = {"aoti", "export", "onnxrt", "litert"}
GOAL = (0.90, 1.10)


def _cell_facts(path: str) -> dict[str, Any]:
    ds, medians = read_cell(path), _process_medians(path)
    threads = json.loads(ds.attrs["threads"])["threads"]
    return {
        "framework": ds.attrs["framework"],
        "mode": ds.attrs["mode"],
        "arch": ds.attrs["arch"],
        "batch": int(ds.attrs["batch"]),
        "artifact": ds.attrs.get("artifact", ""),
        "threads": threads,
        "median_s": statistics.median(medians),
        "process_medians_s": medians,
        "read_factors": [float(read_cell(p)["canary_read_factor"]) for p in _process_paths(path)],
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


def _loop_process(path: str, lock: str) -> dict[str, Any]:
    """The own-API loop of one cell in a fresh process (this script again, with --cell)."""
    command = [sys.executable, __file__, "--cell", path, "--lock", lock]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"{path}: the loop failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def _cell_job(path: str) -> tuple[list[str], Path]:
    """The bench job's arguments for the cell at `path` (process 0), as the workflow runs it,
    with the request the default config plans for it, and where it runs: the results' parent
    (the plan's paths are relative to it)."""
    ds, where = read_cell(path), Path(path)
    results = where.parents[6]  # results/cells/system/framework/version/mode/arch/bN.nc
    keys = dict(zip(paths.ARTIFACT_KEYS, where.parts[-6:-1], strict=True))
    framework, mode, arch = ds.attrs["framework"], ds.attrs["mode"], ds.attrs["arch"]
    request = request_for(framework, mode, arch, int(ds.attrs["batch"]), system=keys["system"])
    if request.settings_hash() != ds.attrs.get("config_hash"):
        print(f"{path}: recorded under other settings than the default config's; rerun with its")
    artifact = paths.ARTIFACT.format(**keys) + ".json"
    hardware = paths.HARDWARE.format(system=keys["system"])
    job = ["--cell", request.to_json(), "--hardware", hardware, f"--artifact={artifact}"]
    return job, results.parent


def _cell_process(job: list[str], cwd: Path, lock: str) -> float:
    """One fresh bench job of the cell; its median."""
    with tempfile.TemporaryDirectory() as scratch:
        out, log = Path(scratch) / "cell.nc", Path(scratch) / "cell.log"
        command = [sys.executable, str(REPO / "workflow" / "scripts" / "bench.py"), *job]
        command += ["--lock", lock, "--log", str(log), str(out)]
        env = os.environ | {"PYTHONPATH": str(REPO / "workflow")}
        run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        if run.returncode != 0 or read_cell(out).attrs["status"] != "ok":
            raise RuntimeError(f"the cell's bench job failed: {run.stderr[-2000:]}")
        return float(np.nanmedian(read_cell(out)["latency_s"].values))


def back_to_back(path: str, lock: str, rounds: int) -> tuple[list[float], list[dict[str, Any]]]:
    """`rounds` × (a fresh bench job of the cell, a fresh loop process): the cell's medians and
    the loop rows, both sides measured in the same minutes."""
    job, cwd = _cell_job(path)
    cells, loops = [], []
    for _ in range(rounds):
        cells.append(_cell_process(job, cwd, lock))
        loops.append(_loop_process(path, lock))
    return cells, loops


def _spread(values_s: list[float]) -> str:
    values = [v * 1e6 for v in values_s]
    return f"{statistics.median(values):.1f} [{min(values):.1f}, {max(values):.1f}]"


def report(path: str, lock: str, rounds: int) -> float:
    """Prints the cell's two ratios; returns the back-to-back one."""
    cells, rows = back_to_back(path, lock, rounds)
    row = rows[0]
    loop = statistics.median(r["loop_s"] for r in rows)
    ratio, sweep_ratio = statistics.median(cells) / loop, row["median_s"] / loop
    name = f"{row['framework']}/{row['mode']}/{row['arch']}/b{row['batch']}"
    reads = ", ".join(f"{f:.2f}" for f in row["read_factors"])
    loops = _spread([r["loop_s"] for r in rows])
    print(
        f"{name:28} {row['threads']:7d} {_spread(cells):>22} {loops:>22}"
        f" {ratio:6.3f}   sweep {_spread(row['process_medians_s'])} ({sweep_ratio:.3f};"
        f" read factor {reads})"
    )
    return ratio


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
    parser.add_argument(
        "--rounds", type=int, default=11, help="rounds of (a cell process, a loop process)"
    )
    args = parser.parse_args()
    if args.cell:
        print(json.dumps(measure_one(args.cell, args.lock)))
        return 0
    found = one_per_mode(args.results, args.arch, args.batch) if args.results else []
    cells = list(args.cells) + found
    if not cells:
        raise SystemExit("no export-mode cells given or found")
    header = f"{'cell':28} {'threads':>7} {'cell µs [range]':>22} {'loop µs [range]':>22}"
    print(f"{header} {'ratio':>6}   (the sweep's cell: µs [processes] (ratio; canary))")
    within = True
    for path in cells:
        try:
            ratio = report(path, args.lock, args.rounds)
        except RuntimeError as error:
            print(error)
            ratio = float("nan")
        within &= GOAL[0] <= ratio <= GOAL[1]
    print(
        f"goal: every back-to-back ratio within {GOAL[0]:.2f}–{GOAL[1]:.2f}: "
        f"{'met' if within else 'NOT met'}"
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
