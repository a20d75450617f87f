"""Atomic writes: an error mid-write keeps the previous file and leaves no temporary one."""

from __future__ import annotations

import os
import stat

import pytest

from fwbench.io.atomic import atomic_path, write_text


def test_a_failed_write_keeps_the_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    write_text("old\n", target)
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a fi")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_a_finished_write_replaces_the_file_with_a_normal_mode(tmp_path):
    target = tmp_path / "deep" / "out.md"
    write_text("new\n", target)
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) & 0o044, "written private (mkstemp's 0600)"
