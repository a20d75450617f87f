"""What the machine can do in theory: peak FLOP/s from the vector ISA or a known device's
vendor figures, and ridge points. Every figure carries its source."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from fwbench.host.identity import dtype_instructions

# int8's "FLOP" are integer operations: a multiply-add counts 2, as a float FMA does.
DTYPES = ("float32", "bfloat16", "float16", "float64", "int8")
KNOWN_DEVICE_FIGURES = ("float32_flops_per_s", "bfloat16_flops_per_s", "bandwidth_Bps")


INTEL_OPTIMIZATION_MANUAL = (
    "Intel 64 and IA-32 Architectures Optimization Reference Manual, Vol. 1 "
    "https://www.intel.com/content/www/us/en/content-details/671488/"
)
AMD_ZEN4_GUIDE = (
    "AMD Software Optimization Guide for the Zen 4 Microarchitecture, pub. 57647 "
    "https://www.amd.com/content/dam/amd/en/documents/processor-tech-docs/"
    "software-optimization-guides/57647.zip; A. Yee, Zen4 AVX512 teardown "
    "http://numberworld.org/blogs/2022_9_26_zen4_avx512/"
)
AMX_SOURCE = (
    "Intel Architecture Day 2021 and " + INTEL_OPTIMIZATION_MANUAL + " (AMX chapter): TMUL "
    "does 1024 bf16 (and fp16) FLOP per cycle per core, a 16×32 by 32×16 tile product "
    "(16,384 FLOP) every 16 cycles"
)
AMX_INT8_SOURCE = (
    INTEL_OPTIMIZATION_MANUAL + " (AMX chapter): TMUL does 2048 int8 operations per cycle per "
    "core, a 16×64 by 64×16 tile product (16,384 multiply-adds) every 16 cycles"
)
VPDPBUSD_SOURCE = (
    "VPDPBUSD (AVX512-VNNI / AVX-VNNI): per 32-bit lane, four u8×s8 products added to the "
    "accumulator = 8 operations, assumed at the FMA rate (uops.info https://uops.info/table.html)"
)
VDPBF16PS_SOURCE = (
    "uops.info instruction tables (VDPBF16PS throughput equals VFMADD231PS on Zen 4, Ice Lake "
    "and Sapphire Rapids) https://uops.info/table.html"
)


def _vector_width(isa: dict[str, bool], vendor: str, family: int | None) -> tuple[int, str]:
    if isa.get("avx512f"):
        if vendor == "AuthenticAMD" and family == 25:
            return 256, "AMD Zen 4 (family 25): AVX-512 ops run on 256-bit units. " + (
                AMD_ZEN4_GUIDE
            )
        return 512, "AVX-512: 512-bit FMA units. " + INTEL_OPTIMIZATION_MANUAL
    if isa.get("avx") or isa.get("avx2"):
        source = AMD_ZEN4_GUIDE if vendor == "AuthenticAMD" else INTEL_OPTIMIZATION_MANUAL
        return 256, "AVX/AVX2: 256-bit units. " + source
    return 0, ""


def isa_flop_per_cycle(
    isa: dict[str, bool], vendor: str, family: int | None, fma_units: int = 2
) -> dict[str, Any]:
    """Per-core FLOP per cycle per dtype from the vector ISA, each figure with its source.

    A vector FMA does 2 FLOP per lane; lanes = datapath bits / dtype bits. The FMA unit count
    is not in any flag: `fma_units` (2: Haswell+ and Xeon Gold/Platinum, Zen) is an assumption,
    recorded as such. AMX and AVX-512-BF16 set the bf16 figure where the CPU has them.
    """
    assumptions = [f"{fma_units} vector FMA units per core (not detectable from flags)"]
    width, width_source = _vector_width(isa, vendor, family)
    if not width:
        return {
            "flop_per_cycle": dict.fromkeys(DTYPES),
            "datapath_bits": None,
            "assumptions": assumptions,
            "sources": {},
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
    sources = {"float64": width_source, "float32": width_source}
    flop["bfloat16"] = None
    flop["float16"] = None
    if isa.get("amx_bf16"):
        flop["bfloat16"] = 1024
        sources["bfloat16"] = AMX_SOURCE
    elif isa.get("avx512_bf16"):
        # VDPBF16PS: per fp32 lane, two bf16 products added to the accumulator = 4 FLOP.
        flop["bfloat16"] = fma_units * 4 * width // 32
        sources["bfloat16"] = "VDPBF16PS, 4 FLOP per fp32 lane at the FMA rate. " + (
            VDPBF16PS_SOURCE
        )
    flop["int8"], int8_source = _int8_per_cycle(isa, width, fma_units)
    if int8_source:
        sources["int8"] = int8_source
    if isa.get("amx_fp16"):
        flop["float16"] = 1024
        sources["float16"] = AMX_SOURCE
    elif isa.get("avx512_fp16"):
        flop["float16"] = per_lane * width // 16
        sources["float16"] = "AVX512-FP16 FMA at the fp32 rate, twice the lanes. " + (
            INTEL_OPTIMIZATION_MANUAL
        )
    return {
        "flop_per_cycle": flop,
        "datapath_bits": width,
        "assumptions": assumptions,
        "sources": sources,
        "derivation": f"FLOP/cycle/core = {how} ({width}-bit datapath); × cores × clock",
    }


def _int8_per_cycle(
    isa: dict[str, bool], width: int, fma_units: int
) -> tuple[int | None, str | None]:
    """int8 operations per cycle per core: AMX's TMUL, else VPDPBUSD (512-bit with
    AVX512-VNNI, 256-bit with AVX-VNNI); None without either (int8 dot products then take
    VPMADDUBSW + VPMADDWD pairs with 16-bit intermediate saturation: not modelled)."""
    if isa.get("amx_int8"):
        return 2048, AMX_INT8_SOURCE
    if isa.get("avx512_vnni") or isa.get("avx_vnni"):
        lanes = (width if isa.get("avx512_vnni") else min(width, 256)) // 32
        return fma_units * 8 * lanes, VPDPBUSD_SOURCE
    return None, None


def theoretical_cpu_peaks(
    cpu: dict[str, Any], cores: int, measured_clock: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Peak FLOP/s per dtype for `cores` cores (None where not derivable), at the all-core
    clock measured under load where there is one, else at the clock the identity read."""
    if cores < 1:
        raise ValueError(f"cores must be ≥ 1, got {cores}")
    model = isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    clock = (measured_clock or {}).get("clock_hz")
    clock_source = "measured: " + measured_clock["method"] if clock else None
    if not clock:
        clock = cpu.get("clock_hz")
        clock_source = f"identity ({cpu.get('clock_source', 'unknown source')}): " + (
            "may be the base clock, below what the cores run at"
        )
    peaks = {
        dtype: (per_cycle * cores * clock if per_cycle and clock else None)
        for dtype, per_cycle in model["flop_per_cycle"].items()
    }
    return model | {
        "cores": cores,
        "clock_hz": clock,
        "clock_source": clock_source,
        "identity_clock_hz": cpu.get("clock_hz"),
        "flops_per_s": peaks,
    }


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
    measured_clock: dict[str, Any] | None = None,
) -> dict[str, Any]:
    name = gpu["name"] if device == "cuda" and gpu else cpu["model"]
    known = match_known_device(name, known_devices)
    theory: dict[str, Any] = {"device_name": name, "known_device": known}
    flops: dict[str, float | None] = dict.fromkeys(DTYPES)
    sources: dict[str, str] = {}
    if device == "cpu":
        model = theoretical_cpu_peaks(cpu, threads, measured_clock)
        theory["isa_model"] = model
        for dtype, peak in model["flops_per_s"].items():
            flops[dtype] = peak
            sources[dtype] = (
                f"ISA model: {model['flop_per_cycle'][dtype]} FLOP/cycle/core × {threads} cores"
                f" × {model['clock_hz'] / 1e9:.3f} GHz; {model['sources'][dtype]}"
                if peak
                else "not derivable"
            )
    for dtype in ("float32", "bfloat16"):
        if known and known.get(f"{dtype}_flops_per_s"):
            flops[dtype] = float(known[f"{dtype}_flops_per_s"])
            sources[dtype] = (
                f"known device {known['name']!r} (whole chip, vendor figure): {known['source']}"
            )
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
    dtypes: list[str],
    compute: dict[str, Any],
    triad_Bps: float | None,
    theory: dict[str, Any],
    memory_levels: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Measured: best measured GEMM ÷ STREAM triad, and ÷ each memory level's roof.
    Theoretical: where both peaks exist."""
    theory_Bps = theory["bandwidth_Bps"]
    per_dtype = {}
    for dtype in dtypes:
        measured_peak = compute["dtypes"][dtype]["best_flops_per_s"]
        theory_peak = theory["flops_per_s"].get(dtype)
        per_level = {
            name: ridge_point(measured_peak, level["bandwidth_Bps"])
            for name, level in (memory_levels or {}).items()
            if measured_peak and level.get("bandwidth_Bps")
        }
        per_dtype[dtype] = {
            "measured_flop_per_byte": (
                ridge_point(measured_peak, triad_Bps) if measured_peak and triad_Bps else None
            ),
            "measured_flop_per_byte_per_level": per_level,
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


def instruction_ceilings(
    isa: dict[str, bool], vendor: str, family: int | None, fma_units: int = 2
) -> dict[str, dict[str, int]]:
    """Per dtype, each of the CPU's GEMM instructions (host.identity.GEMM_INSTRUCTIONS) with
    the operations per cycle per core it can reach (the FMA-unit assumption as in
    isa_flop_per_cycle)."""
    width, _ = _vector_width(isa, vendor, family)
    per_cycle = {
        "AVX-512 FMA": lambda bits: fma_units * 2 * width // bits,
        "AVX2 FMA": lambda bits: fma_units * 2 * min(width, 256) // bits,
        "AMX-BF16 (TDPBF16PS)": lambda bits: 1024,
        "AVX512-BF16 (VDPBF16PS)": lambda bits: fma_units * 4 * width // 32,
        "AMX-FP16 (TDPFP16PS)": lambda bits: 1024,
        "AVX512-FP16 FMA": lambda bits: fma_units * 2 * width // 16,
        "AMX-INT8 (TDPBUSD)": lambda bits: 2048,
        "AVX512-VNNI (VPDPBUSD)": lambda bits: fma_units * 8 * width // 32,
        "AVX-VNNI (VPDPBUSD, 256-bit)": lambda bits: fma_units * 8 * min(width, 256) // 32,
    }
    bits = {"float64": 64, "float32": 32, "bfloat16": 16, "float16": 16, "int8": 8}
    return {
        dtype: {name: per_cycle[name](bits[dtype]) for name in names}
        for dtype, names in dtype_instructions(isa).items()
        if width
    }


def served_by(
    entry: dict[str, Any], ceilings: dict[str, int], cores: int, clock_hz: float | None
) -> dict[str, Any]:
    """Which instructions computed a dtype's best GEMM: the oneDNN kernels' names where the
    kernel pass found them, else the rate itself where it lies above every instruction's
    ceiling but one (at the measured clock), else undetermined (the candidates named)."""
    named = (entry.get("kernels") or {}).get("instructions")
    if named:
        return {"instructions": named, "evidence": "oneDNN JIT kernel names (kernels)"}
    rate = entry.get("best_flops_per_s")
    if not rate or not clock_hz or not ceilings:
        return {"instructions": [], "evidence": "undetermined: no rate, clock or instruction"}
    reached = rate / (cores * clock_hz)
    able = [name for name, ceiling in ceilings.items() if ceiling >= reached]
    others = ", ".join(f"{name} {ceilings[name]}" for name in ceilings if name not in able)
    if len(able) == 1:
        return {
            "instructions": able,
            "evidence": f"{reached:.0f} op/cycle/core at the measured clock, above the ceiling of "
            f"every other instruction this CPU has ({others or 'none'}; op/cycle/core)",
        }
    return {
        "instructions": [],
        "evidence": f"undetermined: {reached:.0f} op/cycle/core is within reach of "
        f"{', '.join(able) or 'no instruction modelled'}",
    }
