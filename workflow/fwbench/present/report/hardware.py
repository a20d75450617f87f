"""A system's hardware: measured and theoretical peaks, STREAM, the memory levels' bandwidths
(a level the roofline filled from the level below marked so), the clock and ridges, from its
hardware file's record (fwbench.io.hardware_file), and the roofline its efficiencies used."""

from __future__ import annotations

from fwbench.io.hardware_file import HardwareRecord, MemoryLevel
from fwbench.present.format import MISSING, fixed, significant
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.tables import markdown_table


def hardware_section(context: ReportContext, part: SystemPart) -> str:
    hardware, stats = part.hardware, part.stats
    text = "## Hardware\n\n"
    if hardware is None:
        return text + "No hardware file was given: no measured limits.\n"
    rows = _peak_rows(hardware)
    for kernel, rate in hardware.stream_Bps.items():
        theory = hardware.theoretical_bandwidth_Bps
        note = hardware.theoretical_bandwidth_source if kernel == "triad" else ""
        share = significant(rate / theory, 2) if theory else MISSING
        rows.append(
            [f"STREAM {kernel} (GB/s)", fixed(rate, 1e-9), fixed(theory, 1e-9), share, note]
        )
    rows += [_level_row(level) for level in hardware.levels]
    if hardware.clock_hz:
        rows.append(["clock under load (GHz)", fixed(hardware.clock_hz, 1e-9, 2), "", "", ""])
    for dtype, peak in hardware.peaks.items():
        measured, theory = peak.measured_ridge, peak.theoretical_ridge
        if measured is not None or theory is not None:
            ridge = [fixed(measured, digits=2), fixed(theory, digits=2)]
            rows.append([f"ridge {dtype} ({_unit(dtype)}/B)", *ridge, "", ""])
    table = markdown_table(
        ["quantity", "measured", "theoretical", "measured ÷ theoretical", "theoretical from"], rows
    )
    threads = hardware.threads if hardware.threads is not None else MISSING
    levels_note = [f"memory levels: {hardware.levels_note}"] if hardware.levels_note else []
    notes = "".join(f"- {note}\n" for note in [*hardware.notes, *levels_note])
    runner = hardware.stream_runner or MISSING
    return (
        text
        + f"{hardware.device_name}, {threads} thread(s), STREAM by {runner} (`{hardware.source}`)."
        "\n\n"
        + table
        + _served_by(hardware)
        + f"\nRoofline used for the efficiencies: {stats.attrs.get('roofline', MISSING)}.\n"
        + (f"\n{notes}" if notes else "")
    )


def _peak_rows(hardware: HardwareRecord) -> list[list[str]]:
    """Per dtype with a figure: measured (by which framework), theoretical, their ratio, and
    where the theoretical figure comes from (or why the dtype was skipped)."""
    rows = []
    for dtype, peak in hardware.peaks.items():
        measured, theory = peak.measured_flops_per_s, peak.theoretical_flops_per_s
        if measured is None and theory is None and not peak.skipped:
            continue
        by = f" ({peak.measured_by})" if peak.measured_by else ""
        share = significant(measured / theory, 2) if measured and theory else MISSING
        figures = [fixed(measured, 1e-9) + by, fixed(theory, 1e-9), share]
        label = f"peak {dtype} (G{_unit(dtype)}/s)"
        rows.append([label, *figures, peak.skipped or peak.theoretical_source])
    return rows


def _unit(dtype: str) -> str:
    """int8's peaks count integer operations (a multiply-add is 2), the others FLOP."""
    return "op" if dtype == "int8" else "FLOP"


def _served_by(hardware: HardwareRecord) -> str:
    """Per dtype with a measured peak: the instructions that computed it, and how we know."""
    lines = [
        f"- {dtype}: {', '.join(peak.served_by) or 'undetermined'} ({peak.served_by_evidence})"
        for dtype, peak in hardware.peaks.items()
        if peak.measured_flops_per_s and peak.served_by_evidence
    ]
    if not lines:
        return ""
    return "\nInstructions that computed each best GEMM:\n\n" + "\n".join(lines) + "\n"


def _level_row(level: MemoryLevel) -> list[str]:
    """A memory level's roof as the roofline takes it; a filled level says so and from where."""
    measured = fixed(level.bandwidth_Bps, 1e-9)
    if level.filled_from:
        measured += f" (filled from {level.filled_from})"
    taken = level.kernel
    if level.working_set_bytes:
        low, high = level.working_set_bytes
        taken += f", working sets {_bytes(low)}–{_bytes(high)}"
    return [f"{level.name} bandwidth (GB/s)", measured, "", "", taken]


def _bytes(count: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"
