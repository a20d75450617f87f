"""The hardware stage: what the machine is, what it can do in theory, and what it does.

`characterize` writes one self-describing JSON (units in key names): the identity of the CPU
(and GPU), STREAM bandwidth, measured GEMM peaks per dtype per framework, theoretical peaks
(from the vector ISA, or from resources/peaks.yaml for known devices) and ridge points.

Framework-free: every framework's measurement runs in its own worker process,
`python -m fwbench.hardware worker <request-json> <result-path>`, which inherits the thread
environment and affinity that `setup_threads` gave this process (so numpy/OpenMP/MKL read them
at import), applies them again, and only then imports the one framework module it needs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from fwbench import provenance, stream
from fwbench.atomic import write_text
from fwbench.frameworks import load, pre_import_env
from fwbench.harness import time_calls, timing_lock
from fwbench.threads import affinity_cores, apply_thread_env, setup_threads

SYSFS_CPU = Path("/sys/devices/system/cpu")
KNOWN_DEVICES = Path(__file__).resolve().parents[2] / "resources" / "peaks.yaml"
DTYPES = ("float32", "bfloat16", "float16", "float64")
ISA_FLAGS = (
    "fma",
    "avx",
    "avx2",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_fp16",
    "asimd",
    "sve",
)
SETTINGS_KEYS = ("stream_llc_multiple", "stream_trials", "gemm_n", "gemm_trials", "dtypes")
KNOWN_DEVICE_FIGURES = ("float32_flops_per_s", "bfloat16_flops_per_s", "bandwidth_Bps")
STREAM_DTYPE = "float64"  # STREAM's own element type


# ---------------------------------------------------------------- identity


def parse_size(text: str) -> int:
    """sysfs cache sizes: '32K', '1024K', '32768K', '2M' → bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"cannot parse cache size {text!r}")
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]
    return int(match.group(1)) * scale


def read_sysfs_caches(root: Path = SYSFS_CPU) -> list[dict[str, Any]]:
    """Every distinct cache instance (level, type, size, the CPUs that share it)."""
    instances: dict[tuple, dict[str, Any]] = {}
    for index in sorted(root.glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_size((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        instances[(level, kind, shared)] = {
            "level": level,
            "type": kind,
            "size_bytes": size,
            "shared_cpu_list": shared,
        }
    return list(instances.values())


def cache_sizes(caches: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
    """Per-instance L1d/L2/L3 sizes and the last-level cache summed over its instances (what
    STREAM's sizing rule is about). sysfs first; py-cpuinfo (whose figures are sometimes
    per-instance, sometimes totals) only where sysfs has nothing."""
    if caches:

        def size(level: int, kinds: tuple[str, ...]) -> int | None:
            sizes = [c["size_bytes"] for c in caches if c["level"] == level and c["type"] in kinds]
            return max(sizes) if sizes else None

        unified = ("Unified", "Data")
        llc_level = max(c["level"] for c in caches if c["type"] in unified)
        llc_total = sum(c["size_bytes"] for c in caches if c["level"] == llc_level)
        return {
            "l1d_bytes": size(1, ("Data",)),
            "l2_bytes": size(2, unified),
            "l3_bytes": size(3, unified),
            "llc_level": llc_level,
            "llc_instances": sum(1 for c in caches if c["level"] == llc_level),
            "llc_total_bytes": llc_total,
            "source": "sysfs (per instance; llc_total_bytes sums the last level's instances)",
        }
    sizes = {
        "l1d_bytes": info.get("l1_data_cache_size") or None,
        "l2_bytes": info.get("l2_cache_size") or None,
        "l3_bytes": info.get("l3_cache_size") or None,
    }
    known = [(level, size) for level, size in enumerate(sizes.values(), start=1) if size]
    llc_level, llc = known[-1] if known else (None, None)
    return sizes | {
        "llc_level": llc_level,
        "llc_instances": None,
        "llc_total_bytes": llc,
        "source": "py-cpuinfo (no sysfs cache data; its figures may be per instance or totals)",
    }


def clock_hz(info: dict[str, Any], root: Path = SYSFS_CPU) -> tuple[float | None, str]:
    """The highest clock we can read, and where it came from."""
    max_freq = root / "cpu0" / "cpufreq" / "cpuinfo_max_freq"
    if max_freq.exists():
        return int(max_freq.read_text()) * 1e3, "sysfs cpufreq cpuinfo_max_freq"
    advertised = info.get("hz_advertised")
    if advertised and advertised[0] > 0:
        return float(advertised[0]), "py-cpuinfo hz_advertised (nominal; boost may be higher)"
    freq = psutil.cpu_freq()
    if freq and freq.max:
        return freq.max * 1e6, "psutil cpu_freq().max"
    return None, "no clock source readable"


def cpu_identity(info: dict[str, Any] | None = None, root: Path = SYSFS_CPU) -> dict[str, Any]:
    """Model, cores, ISA flags, caches, memory and clock of the host CPU.

    `info` is a py-cpuinfo `get_cpu_info()` dict (read here when None); `root` the sysfs CPU
    directory (tests point both at fakes).
    """
    if info is None:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
    flags = set(info.get("flags", []))
    hz, hz_source = clock_hz(info, root)
    return {
        "model": info.get("brand_raw") or "unknown",
        "vendor": info.get("vendor_id_raw") or "unknown",
        "arch": info.get("arch") or "unknown",
        "family": info.get("family"),
        "model_number": info.get("model"),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "affinity_cores": affinity_cores(),
        "isa": {flag: flag in flags for flag in ISA_FLAGS},
        "caches": cache_sizes(read_sysfs_caches(root), info),
        "memory_total_bytes": psutil.virtual_memory().total,
        "clock_hz": hz,
        "clock_source": hz_source,
    }


def nvidia_smi_identity() -> dict[str, Any] | None:
    """GPU 0 as nvidia-smi reports it; None where there is no nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    fields = ("name", "memory.total", "driver_version", "compute_cap")
    try:
        line = subprocess.run(
            ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None
    name, memory_mib, driver, capability = (part.strip() for part in line.split(","))
    return {
        "name": name,
        "memory_total_bytes": int(float(memory_mib)) * 2**20,
        "driver_version": driver,
        "compute_capability": capability,
        "source": "nvidia-smi",
    }


def dtype_support(
    device: str, cpu: dict[str, Any], gpu: dict[str, Any] | None
) -> dict[str, str | None]:
    """None where the hardware computes the dtype natively, else the reason it is skipped."""
    reasons: dict[str, str | None] = {"float32": None, "float64": None}
    if device == "cuda":
        capability = float((gpu or {}).get("compute_capability") or 0)
        reasons["float16"] = (
            None if capability >= 6.0 else f"compute capability {capability} < 6.0: slow fp16"
        )
        reasons["bfloat16"] = (
            None if capability >= 8.0 else f"compute capability {capability} < 8.0: no bf16"
        )
        return reasons
    isa = cpu["isa"]
    reasons["bfloat16"] = (
        None
        if isa["avx512_bf16"] or isa["amx_bf16"]
        else "no avx512_bf16/amx_bf16 in the CPU flags: a bf16 GEMM would be emulated"
    )
    reasons["float16"] = (
        None
        if isa["avx512_fp16"] or isa["amx_fp16"]
        else "no avx512_fp16/amx_fp16 in the CPU flags: an fp16 GEMM would be emulated"
    )
    return reasons


# ---------------------------------------------------------------- theoretical peaks


def isa_flop_per_cycle(
    isa: dict[str, bool], vendor: str, family: int | None, fma_units: int = 2
) -> dict[str, Any]:
    """Per-core FLOP per cycle per dtype from the vector ISA, and how it was derived.

    A vector FMA does 2 FLOP per lane; lanes = datapath bits / dtype bits. The FMA unit count
    is not in any flag: `fma_units` (2: Haswell+ and Xeon Gold/Platinum, Zen) is an assumption,
    recorded as such. AMD family 25 (Zen 4) runs 512-bit ops on 256-bit units.
    """
    assumptions = [f"{fma_units} vector FMA units per core (not detectable from flags)"]
    if isa.get("avx512f"):
        width = 512
        if vendor == "AuthenticAMD" and family == 25:
            width = 256
            assumptions.append("AMD Zen 4 (family 25): AVX-512 executes as 2 × 256-bit halves")
    elif isa.get("avx") or isa.get("avx2"):
        width = 256
    else:
        return {
            "flop_per_cycle": dict.fromkeys(DTYPES),
            "datapath_bits": None,
            "assumptions": assumptions,
            "derivation": "no x86 AVX model for this ISA (pipe counts vary by core): not derived",
        }
    if isa.get("fma"):
        per_lane = 2 * fma_units
        how = f"{fma_units} FMA units × 2 FLOP × lanes"
    else:
        per_lane = 2
        how = "no FMA: 1 add + 1 multiply per lane per cycle"
        assumptions.append("one vector add and one vector multiply pipe")
    flop = {"float64": per_lane * width // 64, "float32": per_lane * width // 32}
    flop["bfloat16"] = None
    flop["float16"] = None
    if isa.get("amx_bf16"):
        flop["bfloat16"] = 1024
        assumptions.append("AMX TMUL: 1024 bf16 FLOP/cycle/core (Intel's figure)")
    elif isa.get("avx512_bf16"):
        # VDPBF16PS: per fp32 lane, two bf16 products added to the accumulator = 4 FLOP.
        flop["bfloat16"] = fma_units * 4 * width // 32
        assumptions.append("VDPBF16PS issues at the FMA rate: 4 FLOP per fp32 lane")
    if isa.get("amx_fp16"):
        flop["float16"] = 1024
        assumptions.append("AMX TMUL: 1024 fp16 FLOP/cycle/core (as for bf16)")
    elif isa.get("avx512_fp16"):
        flop["float16"] = per_lane * width // 16
    return {
        "flop_per_cycle": flop,
        "datapath_bits": width,
        "assumptions": assumptions,
        "derivation": f"FLOP/cycle/core = {how} ({width}-bit datapath); × cores × clock",
    }


def theoretical_cpu_peaks(cpu: dict[str, Any], cores: int) -> dict[str, Any]:
    """Peak FLOP/s per dtype for `cores` cores at the recorded clock (None where not derivable)."""
    if cores < 1:
        raise ValueError(f"cores must be ≥ 1, got {cores}")
    model = isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    clock = cpu.get("clock_hz")
    peaks = {
        dtype: (per_cycle * cores * clock if per_cycle and clock else None)
        for dtype, per_cycle in model["flop_per_cycle"].items()
    }
    return model | {"cores": cores, "clock_hz": clock, "flops_per_s": peaks}


def load_known_devices(path: str | os.PathLike = KNOWN_DEVICES) -> list[dict[str, Any]]:
    import yaml

    devices = yaml.safe_load(Path(path).read_text())["devices"]
    for device in devices:
        re.compile(device["match"])
        for key in KNOWN_DEVICE_FIGURES:
            value = device.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, float | int)
            ):
                raise ValueError(f"{path}: {device['name']}.{key} = {value!r} is not a number")
    return devices


def match_known_device(name: str, devices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first table entry whose `match` regex is found in the device's name."""
    for device in devices:
        if re.search(device["match"], name):
            return device
    return None


def ridge_point(flops_per_s: float, bandwidth_Bps: float) -> float:
    """FLOP per byte at which a kernel stops being memory-bound: peak ÷ bandwidth."""
    if not flops_per_s > 0 or not bandwidth_Bps > 0:
        raise ValueError(
            f"ridge needs positive peak and bandwidth, got {flops_per_s!r}, {bandwidth_Bps!r}"
        )
    return flops_per_s / bandwidth_Bps


# ---------------------------------------------------------------- measurements (workers)


def gemm_summary(n: int, times_s: list[float]) -> dict[str, Any]:
    flops = 2 * n**3
    best = min(times_s)
    return {"flops": flops, "best_s": best, "flops_per_s": flops / best}


def numpy_gemm(n: int, trials: int, dtype: str) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    timing = time_calls(lambda: np.matmul(a, b, out=out), lambda _: None, 0, trials)
    return {
        "times_s": timing.latency_s.tolist(),
        "first_call_s": timing.first_call_s,
        "busy_cpu_other": timing.busy_cpu_other,
        "call": f"numpy {np.__version__} np.matmul(a, b, out=out)",
    }


def _gemms(gemm: Any, n: int, trials: int, dtypes: list[str]) -> dict[str, Any]:
    """Each dtype's GEMM; a dtype the framework cannot run is recorded, not fatal."""
    results = {}
    for dtype in dtypes:
        try:
            results[dtype] = gemm(n=n, trials=trials, dtype=dtype)
        except Exception as error:  # any failure is this dtype's result, not the run's
            results[dtype] = {"error": f"{type(error).__name__}: {error}"}
    return results


def _worker(request: dict[str, Any]) -> dict[str, Any]:
    """In the worker process: threads first, then the one framework, then the task."""
    threads = setup_threads(request["threads"])
    framework, task, device, args = (
        request[key] for key in ("framework", "task", "device", "args")
    )
    if framework == "numpy":
        setup, module = {"numpy": np.__version__}, None
    else:
        module = load(framework, "hardware")
        setup = module.setup(threads["threads"])
    if task == "gemm":
        gemm = numpy_gemm if module is None else partial(module.gemm, device=device)
        result = _gemms(gemm, **args)
    elif task == "stream":
        run = (
            stream.numpy_stream if module is None else partial(module.stream_kernels, device=device)
        )
        result = run(**args)
    elif task == "cuda_identity" and module is not None:
        result = module.cuda_identity()
    else:
        raise ValueError(f"no hardware task {task!r} for {framework}")
    return {"setup": setup, "threads": threads, "result": result}


def _thread_env(threads: int) -> dict[str, str]:
    """The variables apply_thread_env would set, without changing this process's environment:
    the worker must see them at start-up, before numpy loads its BLAS."""
    saved = dict(os.environ)
    try:
        return apply_thread_env(threads)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_worker(
    framework: str,
    task: str,
    args: dict[str, Any],
    threads: int,
    device: str,
    log: Any = None,
    timeout_s: float = 3600,
) -> dict[str, Any]:
    """Run one task in a fresh process; its stderr goes to `log`. Raises with the exit code."""
    request = {"framework": framework, "task": task, "args": args, "threads": threads}
    request["device"] = device
    env = os.environ | _thread_env(threads) | pre_import_env(framework, device)
    with tempfile.TemporaryDirectory(prefix="fwbench-hw-") as scratch:
        result_path = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "fwbench.hardware", "worker", json.dumps(request)]
        completed = subprocess.run(
            [*command, str(result_path)],
            env=env,
            stdout=log or subprocess.DEVNULL,
            stderr=log or subprocess.DEVNULL,
            timeout=timeout_s,
        )
        if completed.returncode != 0 or not result_path.exists():
            raise RuntimeError(
                f"hardware worker {framework}/{task} exited with {completed.returncode}"
                " (its traceback is in the hardware log)"
            )
        return json.loads(result_path.read_text())


# ---------------------------------------------------------------- the characterization


def check_settings(settings: dict[str, Any], frameworks: list[str], device: str) -> None:
    missing = [key for key in SETTINGS_KEYS if key not in settings]
    if missing:
        raise ValueError(f"hardware settings lack {', '.join(missing)}")
    unknown = [dtype for dtype in settings["dtypes"] if dtype not in DTYPES]
    if unknown:
        raise ValueError(f"hardware dtypes {unknown} unknown; known: {', '.join(DTYPES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if not frameworks:
        raise ValueError("frameworks is empty: no GEMM peak could be measured")


def _log(log: Any, message: str) -> None:
    if log is not None:
        log.write(f"[fwbench.hardware {time.strftime('%H:%M:%S')}] {message}\n")
        log.flush()


def _measure_stream(
    frameworks: list[str], device: str, threads: int, elements: int, trials: int, log: Any
) -> dict[str, Any]:
    args = {"elements": elements, "trials": trials, "dtype": STREAM_DTYPE}
    if "torch" in frameworks:
        worker = run_worker("torch", "stream", args, threads, device, log)
        return worker["result"] | {"runner": "torch", "versions": worker["setup"]}
    if device == "cuda":
        raise ValueError("STREAM on cuda needs torch: numpy would measure the host's memory")
    worker = run_worker("numpy", "stream", args, threads, device, log)
    return worker["result"] | {"runner": "numpy", "versions": worker["setup"]}


def _measure_gemms(
    frameworks: list[str],
    settings: dict[str, Any],
    supported: dict[str, str | None],
    device: str,
    threads: int,
    log: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    n, trials = settings["gemm_n"], settings["gemm_trials"]
    measurable = [dtype for dtype in settings["dtypes"] if supported[dtype] is None]
    per_framework: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}
    for framework in [*frameworks, "numpy"]:
        dtypes = measurable if framework != "numpy" else []
        if framework == "numpy" and device == "cpu" and "float32" in measurable:
            dtypes = ["float32"]  # numpy's BLAS: fp32 only, and only the host CPU
        if not dtypes:
            continue
        _log(log, f"GEMM {framework} {dtypes} n={n}")
        args = {"n": n, "trials": trials, "dtypes": dtypes}
        try:
            worker = run_worker(framework, "gemm", args, threads, device, log)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            per_framework[framework] = {dtype: {"error": str(error)} for dtype in dtypes}
            continue
        versions[framework] = worker["setup"]
        per_framework[framework] = worker["result"]

    compute: dict[str, Any] = {"gemm_n": n, "gemm_trials": trials, "dtypes": {}}
    for dtype in settings["dtypes"]:
        entry: dict[str, Any] = {"skipped_reason": supported[dtype], "per_framework": {}}
        for framework, results in per_framework.items():
            if dtype in results:
                measured = results[dtype]
                if "times_s" in measured:
                    measured = measured | gemm_summary(n, measured["times_s"])
                entry["per_framework"][framework] = measured
        ok = {fw: r for fw, r in entry["per_framework"].items() if "flops_per_s" in r}
        best = max(ok, key=lambda fw: ok[fw]["flops_per_s"], default=None)
        entry["best_framework"] = best
        entry["best_flops_per_s"] = ok[best]["flops_per_s"] if best else None
        compute["dtypes"][dtype] = entry
    return compute, versions


def _theoretical(
    device: str,
    cpu: dict[str, Any],
    gpu: dict[str, Any] | None,
    threads: int,
    known_devices: list[dict[str, Any]],
) -> dict[str, Any]:
    name = gpu["name"] if device == "cuda" and gpu else cpu["model"]
    known = match_known_device(name, known_devices)
    theory: dict[str, Any] = {"device_name": name, "known_device": known}
    flops: dict[str, float | None] = dict.fromkeys(DTYPES)
    sources: dict[str, str] = {}
    if device == "cpu":
        theory["isa_model"] = theoretical_cpu_peaks(cpu, threads)
        for dtype, peak in theory["isa_model"]["flops_per_s"].items():
            flops[dtype] = peak
            sources[dtype] = f"ISA model × {threads} cores" if peak else "not derivable"
    for dtype in ("float32", "bfloat16"):
        if known and known.get(f"{dtype}_flops_per_s"):
            flops[dtype] = float(known[f"{dtype}_flops_per_s"])
            sources[dtype] = f"known device {known['name']!r} (whole chip, vendor figure)"
    bandwidth = float(known["bandwidth_Bps"]) if known and known.get("bandwidth_Bps") else None
    theory["flops_per_s"] = flops
    theory["flops_source"] = sources
    theory["bandwidth_Bps"] = bandwidth
    theory["bandwidth_source"] = (
        f"known device {known['name']!r}"
        if bandwidth
        else "not derivable: DRAM channels and speed are not readable without root"
    )
    return theory


def _ridges(
    dtypes: list[str], compute: dict[str, Any], triad_Bps: float | None, theory: dict[str, Any]
) -> dict[str, Any]:
    """Measured: best measured GEMM ÷ STREAM triad. Theoretical: where both peaks exist."""
    theory_Bps = theory["bandwidth_Bps"]
    per_dtype = {}
    for dtype in dtypes:
        measured_peak = compute["dtypes"][dtype]["best_flops_per_s"]
        theory_peak = theory["flops_per_s"].get(dtype)
        per_dtype[dtype] = {
            "measured_flop_per_byte": (
                ridge_point(measured_peak, triad_Bps) if measured_peak and triad_Bps else None
            ),
            "theoretical_flop_per_byte": (
                ridge_point(theory_peak, theory_Bps) if theory_peak and theory_Bps else None
            ),
        }
    return {
        "measured_bandwidth_Bps": triad_Bps,
        "measured_bandwidth_source": "STREAM triad, best trial",
        "theoretical_bandwidth_Bps": theory_Bps,
        "per_dtype": per_dtype,
    }


def _identify(
    device: str, frameworks: list[str], threads: int, log: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    cpu = cpu_identity()
    if device == "cpu":
        return cpu, None
    gpu = nvidia_smi_identity() or {}
    if "torch" in frameworks:
        gpu |= run_worker("torch", "cuda_identity", {}, threads, device, log)["result"]
    if not gpu:
        raise RuntimeError("device 'cuda' but neither nvidia-smi nor torch sees a GPU")
    return cpu, gpu


def _stream_elements(
    cpu: dict[str, Any], gpu: dict[str, Any] | None, llc_multiple: float
) -> tuple[int, int]:
    """Elements per array from the device's last-level cache; and that cache's size."""
    llc = gpu.get("l2_cache_bytes") if gpu else cpu["caches"]["llc_total_bytes"]
    if not llc:
        raise RuntimeError("cannot size STREAM arrays: the last-level cache size is unknown")
    element_bytes = np.dtype(STREAM_DTYPE).itemsize
    elements = stream.array_elements(llc, llc_multiple, element_bytes)
    memory = gpu["memory_total_bytes"] if gpu else psutil.virtual_memory().available
    stream.check_fits_in_memory(elements, element_bytes, memory)
    return elements, llc


def _sizing(llc: int, llc_multiple: float) -> dict[str, Any]:
    sizing: dict[str, Any] = {"llc_bytes": llc, "llc_multiple": llc_multiple}
    if llc_multiple < 4:
        sizing["note"] = (
            f"arrays are {llc_multiple} × the last-level cache, below STREAM's rule of 4 ×: "
            "the rates include cache bandwidth and overstate memory bandwidth"
        )
    return sizing


def _compare_to_theory(compute: dict[str, Any], theory: dict[str, Any]) -> None:
    """Best measured ÷ theoretical per dtype. Above 1 means the model is wrong (a nominal clock
    below the boost clock, say), and is flagged rather than clamped."""
    for dtype, entry in compute["dtypes"].items():
        peak = theory["flops_per_s"].get(dtype)
        ratio = entry["best_flops_per_s"] / peak if entry["best_flops_per_s"] and peak else None
        entry["best_over_theoretical"] = ratio
        entry["above_theoretical"] = bool(ratio and ratio > 1)


def characterize(
    output: str | os.PathLike,
    settings: dict[str, Any],
    frameworks: list[str],
    device: str,
    threads: int | str,
    lock: str | os.PathLike,
    log: Any = None,
    known_devices_path: str | os.PathLike = KNOWN_DEVICES,
) -> dict[str, Any]:
    """Measure this host (or its GPU) under the timing lock, write the JSON atomically to
    `output`, and return it. `log` is an open text file for progress and workers' stderr."""
    check_settings(settings, frameworks, device)
    known_devices = load_known_devices(known_devices_path)
    thread_settings = setup_threads(threads)
    threads = thread_settings["threads"]
    with timing_lock(lock) as lock_wait_s:
        start_ns, load_before = time.time_ns(), os.getloadavg()[0]
        _log(log, f"lock acquired after {lock_wait_s:.1f} s; threads={threads} device={device}")
        cpu, gpu = _identify(device, frameworks, threads, log)
        if device == "cuda" and "torch" not in frameworks:
            bandwidth = {"runner": None, "error": "STREAM on cuda needs torch among the frameworks"}
        else:
            elements, llc = _stream_elements(cpu, gpu, settings["stream_llc_multiple"])
            _log(log, f"STREAM: 3 arrays × {elements} {STREAM_DTYPE} elements")
            bandwidth = _measure_stream(
                frameworks, device, threads, elements, settings["stream_trials"], log
            )
            bandwidth |= _sizing(llc, settings["stream_llc_multiple"])
        supported = dtype_support(device, cpu, gpu)
        compute, worker_setups = _measure_gemms(
            frameworks, settings, supported, device, threads, log
        )
        end_ns, load_after = time.time_ns(), os.getloadavg()[0]
    theory = _theoretical(device, cpu, gpu, threads, known_devices)
    _compare_to_theory(compute, theory)
    triad_Bps = bandwidth.get("kernels", {}).get("triad", {}).get("best_bandwidth_Bps")
    result = {
        "schema_version": 1,
        "host": provenance.host(),
        "device": device,
        "identity": {"cpu": cpu, "gpu": gpu},
        "bandwidth": bandwidth,
        "compute": compute,
        "theoretical": theory,
        "ridge": _ridges(settings["dtypes"], compute, triad_Bps, theory),
        "provenance": {
            "host": provenance.host(),
            "start_utc": provenance.utc(start_ns),
            "end_utc": provenance.utc(end_ns),
            "duration_s": (end_ns - start_ns) * 1e-9,
            "threads": thread_settings,
            "lock": str(lock),
            "lock_wait_s": lock_wait_s,
            "load_before": load_before,
            "load_after": load_after,
            "settings": settings,
            "frameworks": list(frameworks),
            "versions": provenance.runtime(("numpy", "py-cpuinfo", "psutil", "PyYAML")),
            "framework_settings": worker_setups,
            "git_commit": provenance.git_commit(Path(__file__).parent),
        },
    }
    write_json_atomic(result, output)
    return result


def write_json_atomic(data: dict[str, Any], path: str | os.PathLike) -> None:
    write_text(json.dumps(data, indent=2, allow_nan=False), path)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "worker":
        raise SystemExit("usage: python -m fwbench.hardware worker <request-json> <result-path>")
    write_json_atomic(_worker(json.loads(sys.argv[2])), sys.argv[3])
