"""What the machine is: CPU model, ISA flags, caches, clock (sysfs, py-cpuinfo, psutil) and
the GPU as nvidia-smi reports it; which dtypes the hardware computes natively."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from fwbench.host.threads import affinity_cores

SYSFS_CPU = Path("/sys/devices/system/cpu")
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
    # the int8 dot-product instructions a quantized GEMM runs on (without them, x86 int8
    # kernels widen to 16 bits: ONNX Runtime's reduce_range advice)
    "avx512_vnni",
    "avx_vnni",
    "amx_int8",
    "asimd",
    "sve",
)


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
            "instances": caches,
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
        reasons["int8"] = (
            None if capability >= 7.5 else f"compute capability {capability} < 7.5: no int8 MMA"
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
    reasons["int8"] = (
        None
        if isa["avx512_vnni"] or isa["avx_vnni"] or isa["amx_int8"]
        else "no VNNI/AMX-INT8 in the CPU flags: int8 dot products would take VPMADDUBSW + "
        "VPMADDWD pairs (16-bit intermediate saturation; ONNX Runtime's quantizer then needs "
        "reduce_range)"
    )
    return reasons


def int8_widens(cpu: dict[str, Any] | None = None) -> bool:
    """Whether this CPU's int8 dot products widen to 16-bit pairs (no VNNI/AMX-INT8, see
    dtype_support): there full-range int8 weights saturate the pairs' sums, so the quantizers
    write 7-bit weights (reduce_range), as ONNX Runtime and PyTorch advise for such CPUs."""
    return dtype_support("cpu", cpu or cpu_identity(), None)["int8"] is not None


# Per dtype, the CPU's instructions that compute its GEMM, fastest first: (flag, name).
GEMM_INSTRUCTIONS = {
    "float64": (("avx512f", "AVX-512 FMA"), ("fma", "AVX2 FMA")),
    "float32": (("avx512f", "AVX-512 FMA"), ("fma", "AVX2 FMA")),
    "bfloat16": (("amx_bf16", "AMX-BF16 (TDPBF16PS)"), ("avx512_bf16", "AVX512-BF16 (VDPBF16PS)")),
    "float16": (("amx_fp16", "AMX-FP16 (TDPFP16PS)"), ("avx512_fp16", "AVX512-FP16 FMA")),
    "int8": (
        ("amx_int8", "AMX-INT8 (TDPBUSD)"),
        ("avx512_vnni", "AVX512-VNNI (VPDPBUSD)"),
        ("avx_vnni", "AVX-VNNI (VPDPBUSD, 256-bit)"),
    ),
}


def dtype_instructions(isa: dict[str, bool]) -> dict[str, list[str]]:
    """Per dtype, the instructions this CPU has for its products (from its flags), fastest
    first; empty where it has none (the dtype is then converted or emulated)."""
    return {
        dtype: [name for flag, name in options if isa.get(flag)]
        for dtype, options in GEMM_INSTRUCTIONS.items()
    }
