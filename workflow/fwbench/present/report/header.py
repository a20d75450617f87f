"""The report's first lines: what was compared on which systems or device, how many cells,
the framework versions and the code's commit."""

from __future__ import annotations

from fwbench.present.format import MISSING
from fwbench.present.report.context import ReportContext
from fwbench.present.report.markdown import parse_json

TITLE = "# fwbench report\n\n"
SETTINGS_HASH = "each cell's settings hash is in `results/aggregate/bench.nc` (`config_hash`).\n"


def header_section(context: ReportContext) -> str:
    """The title and one paragraph: over every system, or over the one machine's device."""
    if context.names:
        return _systems_header(context)
    attrs = context.stats.attrs
    versions = parse_json(attrs.get("framework_versions", ""))
    versions_text = ", ".join(f"{fw} {v}" for fw, v in versions.items()) if versions else MISSING
    hardware = context.parts[0].hardware
    device = hardware.device_name if hardware else attrs.get("device", MISSING)
    return (
        TITLE + f"PyTorch vs JAX vs TensorFlow on **{device}** (host "
        f"`{attrs.get('host', MISSING)}`, device `{attrs.get('device', MISSING)}`): "
        f"{attrs.get('cells', MISSING)} cells; {versions_text}. Code "
        f"`{attrs.get('git_commit', MISSING)}`; " + SETTINGS_HASH
    )


def _systems_header(context: ReportContext) -> str:
    attrs = context.stats.attrs
    versions = parse_json(attrs.get("framework_versions", "{}") or "{}")
    versions_text = (
        ", ".join(
            f"{fw} {v if isinstance(v, str) else ' / '.join(v)}" for fw, v in versions.items()
        )
        or MISSING
    )
    names = context.names
    return (
        TITLE + f"PyTorch vs JAX vs TensorFlow on {len(names)} system(s) ({', '.join(names)}): "
        f"{context.cells} cells; {versions_text}. Code `{attrs.get('git_commit', MISSING)}`; "
        + SETTINGS_HASH
    )
