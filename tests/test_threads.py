"""Thread placement: one thread per physical core before any SMT sibling."""

from __future__ import annotations

from pathlib import Path

import pytest

from fwbench.host import threads
from fwbench.host.threads import physical_core_order, physical_cores, resolve_threads


def _topology(root: Path, cpu: int, package: int, core: int) -> None:
    directory = root / f"cpu{cpu}" / "topology"
    directory.mkdir(parents=True)
    (directory / "physical_package_id").write_text(f"{package}\n")
    (directory / "core_id").write_text(f"{core}\n")


def test_siblings_come_after_one_cpu_of_every_physical_core(tmp_path):
    # 2 packages × 2 cores × 2 SMT threads, Linux numbering: siblings are n and n + 4
    for cpu in range(8):
        _topology(tmp_path, cpu, package=(cpu % 4) // 2, core=cpu % 2)
    assert physical_core_order(range(8), tmp_path) == [0, 1, 2, 3, 4, 5, 6, 7]
    # a mask holding one core's two siblings and another core: the lone core comes before
    assert physical_core_order([0, 4, 1], tmp_path) == [0, 1, 4]
    # adjacent numbering (siblings 2k, 2k + 1), as some firmware lays them out
    adjacent = tmp_path / "adjacent"
    for cpu in range(4):
        _topology(adjacent, cpu, package=0, core=cpu // 2)
    assert physical_core_order(range(4), adjacent)[:2] == [0, 2]


def test_without_topology_every_cpu_is_its_own_core(tmp_path):
    assert physical_core_order([3, 1, 2], tmp_path) == [1, 2, 3]
    assert physical_cores(tmp_path) >= 1


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 1), (8, 7)])
def test_auto_leaves_one_core_to_the_os_and_snakemake(monkeypatch, cores, expected):
    monkeypatch.setattr(threads, "physical_cores", lambda: cores)
    assert resolve_threads("auto") == expected
    assert resolve_threads(3) == 3
