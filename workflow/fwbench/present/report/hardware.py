"""A system's hardware: measured and theoretical peaks, STREAM, the memory levels' bandwidths,
the clock and ridges, from its hardware summary, and the roofline its efficiencies used."""

from __future__ import annotations

from fwbench.present.format import MISSING, fixed, significant
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.tables import markdown_table


def hardware_section(context: ReportContext, part: SystemPart) -> str:
    hardware, stats = part.hardware, part.stats
    text = "## Hardware\n\n"
    if hardware is None:
        return text + "No hardware file was given: no measured limits.\n"
    rows = []
    for dtype in hardware.dtypes:
        measured = hardware.measured_flops_per_s.get(dtype)
        theory = hardware.theoretical_flops_per_s.get(dtype)
        if measured is None and theory is None and dtype not in hardware.skipped:
            continue
        by = f" ({hardware.measured_by[dtype]})" if hardware.measured_by.get(dtype) else ""
        share = significant(measured / theory, 2) if measured and theory else MISSING
        source = hardware.skipped.get(dtype) or hardware.theoretical_flops_source.get(dtype, "")
        measured_text = fixed(measured, 1e-9) + by
        rows.append([f"peak {dtype} (GFLOP/s)", measured_text, fixed(theory, 1e-9), share, source])
    for kernel, rate in hardware.stream_Bps.items():
        theory = hardware.theoretical_bandwidth_Bps
        note = hardware.theoretical_bandwidth_source if kernel == "triad" else ""
        share = significant(rate / theory, 2) if theory else MISSING
        rows.append(
            [f"STREAM {kernel} (GB/s)", fixed(rate, 1e-9), fixed(theory, 1e-9), share, note]
        )
    for name, level in hardware.memory_levels.items():
        low_high = level["working_set_bytes"]
        taken = (
            f"{level['roof_kernel']}, working sets {_bytes(low_high[0])}–{_bytes(low_high[1])}"
            if low_high
            else str(level["roof_kernel"])
        )
        rows.append(
            [f"{name} bandwidth (GB/s)", fixed(level["bandwidth_Bps"], 1e-9), "", "", taken]
        )
    if hardware.clock_hz:
        rows.append(["clock under load (GHz)", fixed(hardware.clock_hz, 1e-9, 2), "", "", ""])
    for dtype, ridge in hardware.measured_ridge.items():
        theory = hardware.theoretical_ridge.get(dtype)
        rows.append(
            [f"ridge {dtype} (FLOP/B)", fixed(ridge, digits=2), fixed(theory, digits=2), "", ""]
        )
    table = markdown_table(
        ["quantity", "measured", "theoretical", "measured ÷ theoretical", "theoretical from"], rows
    )
    threads = hardware.threads if hardware.threads is not None else MISSING
    notes = "".join(f"- {note}\n" for note in hardware.notes)
    runner = hardware.stream_runner or MISSING
    return (
        text
        + f"{hardware.device_name}, {threads} thread(s), STREAM by {runner} (`{hardware.source}`)."
        "\n\n"
        + table
        + f"\nRoofline used for the efficiencies: {stats.attrs.get('roofline', MISSING)}.\n"
        + (f"\n{notes}" if notes else "")
    )


def _bytes(count: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"
