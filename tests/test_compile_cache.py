"""Process 0 compiles cold and leaves its cache; the cell's later processes start warm from a
private copy of it."""

from __future__ import annotations

import dataclasses
import os

from fwbench.measure import compile_cache

from fake_adapter import request


def test_later_processes_start_from_a_copy_of_process_zeros_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = request()  # the fake cell is named torch: inductor's cache variable
    later = dataclasses.replace(first, process=1)
    (tmp_path / "s1").mkdir()
    env, note = compile_cache.prepare(later, str(tmp_path / "s1"))
    assert note.startswith("cold: process 0 left no cache")

    env, note = compile_cache.prepare(first, str(tmp_path / "s0"))
    assert note.startswith("cold: an empty cache directory")
    (directory,) = env.values()
    os.makedirs(directory)
    (tmp_path / directory / "graph.bin").write_text("compiled")
    compile_cache.keep(first, str(tmp_path / "s0"))
    shared = compile_cache.shared_dir(first)
    assert str(shared).startswith("results/compile_cache/local/torch/0.0-fake/eager/mlp/b2")

    env, note = compile_cache.prepare(later, str(tmp_path / "s2"))
    assert note.startswith("warm: a copy of process 0's")
    (directory,) = env.values()
    assert (tmp_path / directory / "graph.bin").read_text() == "compiled"
    (tmp_path / directory / "graph.bin").write_text("changed by process 1")
    assert (shared / "torchinductor_cache_dir" / "graph.bin").read_text() == "compiled"
    compile_cache.keep(later, str(tmp_path / "s2"))  # only process 0 writes the shared cache
    assert (shared / "torchinductor_cache_dir" / "graph.bin").read_text() == "compiled"


def test_a_framework_without_an_on_disk_cache_records_none():
    jax_cell = dataclasses.replace(request(), framework="jax")
    assert compile_cache.prepare(jax_cell, "/nonexistent") == ({}, compile_cache.NONE)
