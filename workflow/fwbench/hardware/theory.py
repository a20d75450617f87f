"""What the machine can do in theory: peak FLOP/s from the vector ISA or a known device's
vendor figures, and ridge points. Every figure carries its source."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

DTYPES = ("float32", "bfloat16", "float16", "float64")
KNOWN_DEVICE_FIGURES = ("float32_flops_per_s", "bfloat16_flops_per_s", "bandwidth_Bps")


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


def load_known_devices(path: str | os.PathLike) -> list[dict[str, Any]]:
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


def theoretical_peaks(
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


def ridges(
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


def compare_to_theory(compute: dict[str, Any], theory: dict[str, Any]) -> None:
    """Best measured ÷ theoretical per dtype. Above 1 means the model is wrong (a nominal clock
    below the boost clock, say), and is flagged rather than clamped."""
    for dtype, entry in compute["dtypes"].items():
        peak = theory["flops_per_s"].get(dtype)
        ratio = entry["best_flops_per_s"] / peak if entry["best_flops_per_s"] and peak else None
        entry["best_over_theoretical"] = ratio
        entry["above_theoretical"] = bool(ratio and ratio > 1)
