"""Process 0 compiles cold and leaves its cache; the cell's later processes start warm from a
private copy of it; a cold cache starts from the host probe's seed, made once."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from fwbench import frameworks
from fwbench.measure import compile_cache

from fake_adapter import request

TESTS = os.path.dirname(__file__)


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
    tf_cell = dataclasses.replace(request(), framework="tensorflow")
    assert compile_cache.prepare(tf_cell, "/nonexistent") == ({}, compile_cache.NONE)


@pytest.mark.jax
def test_jax_keeps_its_persistent_compilation_cache_for_every_executable(tmp_path):
    # jax reads these variables (its config flags' names, upper-cased): a quick jit is kept
    pytest.importorskip("jax")
    (name,) = frameworks.compile_cache_env("jax")
    env = os.environ | frameworks.pre_import_env("jax", "cpu") | {name: str(tmp_path)}
    code = "import jax, jax.numpy as j; jax.jit(lambda x: j.tanh(x) * 3)(j.ones(4))"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert any("jit__lambda" in path.name for path in tmp_path.iterdir())


def test_a_cold_cache_starts_from_the_host_probe_made_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("FAKE_SEED_RUNS", str(runs))
    monkeypatch.setenv("PYTHONPATH", TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setattr(
        frameworks, "cache_seed_module", lambda fw, mode: "fake_cache_seed" * (mode == "compiled")
    )
    cell = dataclasses.replace(request(), mode="compiled", lock=str(tmp_path / "lock"))
    for scratch in ("s0", "s1"):
        env, note = compile_cache.prepare(cell, str(tmp_path / scratch))
        (directory,) = env.values()
        assert (tmp_path / directory / "isa.so").read_text() == "probed"
        assert "but for the host probe fake_cache_seed" in note and '"isa": "fake"' in note
    assert runs.read_text() == "run\n"  # the second cell copied the first one's seed
    seed = compile_cache.seed_dir(cell)
    assert str(seed) == "results/compile_cache/local/torch/0.0-fake/_host_probe"
    assert not list(seed.parent.glob("*.tmp"))
    env, note = compile_cache.prepare(dataclasses.replace(cell, mode="eager"), str(tmp_path / "e"))
    assert note == "cold: an empty cache directory (left for the cell's later processes)"


def test_a_failed_host_probe_is_recorded_and_leaves_the_cache_empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FAKE_SEED_RUNS", raising=False)  # the fake probe's KeyError
    monkeypatch.setenv("PYTHONPATH", TESTS)
    monkeypatch.setattr(frameworks, "cache_seed_module", lambda fw, mode: "fake_cache_seed")
    cell = dataclasses.replace(request(), mode="compiled", lock=str(tmp_path / "lock"))
    env, note = compile_cache.prepare(cell, str(tmp_path / "s0"))
    assert note.startswith("cold: an empty cache directory (no seed: fake_cache_seed failed")
    assert "KeyError: 'FAKE_SEED_RUNS'" in note and note.endswith(
        "host probe) (left for the cell's later processes)"
    )
    (directory,) = env.values()
    assert not (tmp_path / directory).exists()
    seed = compile_cache.seed_dir(cell)
    assert not seed.parent.exists() or not any(seed.parent.iterdir())
