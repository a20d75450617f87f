"""The registry of framework packages (fwbench.frameworks): what differs per framework is data
on its package, read without importing the framework, and asked for by name."""

from __future__ import annotations

import re

import pytest

from fwbench import frameworks
from fwbench.frameworks.info import FrameworkInfo


def test_every_package_holds_its_info_under_its_own_name() -> None:
    assert list(frameworks.FRAMEWORKS) == ["torch", "jax", "tensorflow"]
    for name, info in frameworks.FRAMEWORKS.items():
        assert isinstance(info, FrameworkInfo) and info.name == name
        assert frameworks.MODES[name] == info.modes and info.modes[0] == "eager"
        by_mode = [d for ds in info.mode_distributions.values() for d in ds]
        by_precision = [
            d for by in info.precision_distributions.values() for ds in by.values() for d in ds
        ]
        assert frameworks.DISTRIBUTIONS[name] == (
            info.distributions,
            (*info.recorded, *dict.fromkeys(by_mode + by_precision)),
        )
        assert set(info.runtime_modes) <= set(info.export_modes) <= set(info.modes)


def test_the_pre_import_environment_is_each_frameworks_own_per_device() -> None:
    assert frameworks.pre_import_env("torch", "cuda") == {}
    assert frameworks.pre_import_env("jax", "cpu") == {
        "JAX_PLATFORMS": "cpu",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    assert frameworks.pre_import_env("jax", "cuda")["JAX_PLATFORMS"] == "cuda"
    assert frameworks.pre_import_env("tensorflow", "cpu")["CUDA_VISIBLE_DEVICES"] == ""
    assert "CUDA_VISIBLE_DEVICES" not in frameworks.pre_import_env("tensorflow", "cuda")


def test_the_pre_import_environment_is_a_copy_and_empty_for_a_runner_that_is_no_framework() -> None:
    frameworks.pre_import_env("jax", "cpu")["JAX_PLATFORMS"] = "tpu"
    assert frameworks.pre_import_env("jax", "cpu")["JAX_PLATFORMS"] == "cpu"
    assert frameworks.pre_import_env("numpy", "cpu") == {}
    with pytest.raises(ValueError, match="'tpu'"):
        frameworks.pre_import_env("jax", "tpu")


def test_only_frameworks_with_compile_options_take_them_and_name_them() -> None:
    takes = {fw: frameworks.takes_compile_options(fw) for fw in frameworks.FRAMEWORKS}
    assert takes == {"torch": True, "jax": False, "tensorflow": False}
    assert frameworks.compile_option_names("torch") == ("mode", "fullgraph", "dynamic", "freezing")
    assert frameworks.compile_option_names("jax") == ()
    assert frameworks.mode_takes_compile_options("torch", "compiled_max")
    assert not frameworks.mode_takes_compile_options("torch", "eager")
    assert not frameworks.mode_takes_compile_options("tensorflow", "xla")


def test_compiled_variants_exist_where_the_framework_has_a_pattern_for_them() -> None:
    assert frameworks.is_compiled_variant("torch", "compiled_max_autotune")
    assert not frameworks.is_compiled_variant("torch", "compiled")
    assert not frameworks.is_compiled_variant("torch", "compiled_Bad")
    assert not frameworks.is_compiled_variant("jax", "compiled_max")
    assert not frameworks.is_compiled_variant("mxnet", "compiled_max")
    frameworks.check_framework_mode("torch", "compiled_max")
    with pytest.raises(ValueError, match="'compiled_max' does not exist for jax"):
        frameworks.check_framework_mode("jax", "compiled_max")
    with pytest.raises(ValueError, match="unknown framework 'mxnet'"):
        frameworks.check_framework_mode("mxnet", "eager")


def test_compile_options_are_checked_by_framework_and_mode() -> None:
    check = frameworks.check_compile_options
    assert check("torch", "compiled", {"fullgraph": True}) == {"fullgraph": True}
    assert check("jax", "jit", None) == {}
    with pytest.raises(ValueError, match=re.escape("unknown torch compile options ['backend']")):
        check("torch", "compiled", {"backend": "eager"})
    with pytest.raises(ValueError, match="eager takes no compile options, got \\['freezing'\\]"):
        check("torch", "eager", {"freezing": True})
    with pytest.raises(ValueError, match="jax modes take no compile options"):
        check("jax", "jit", {"freezing": True})


def test_the_stream_probe_is_the_first_configured_framework_whose_probe_runs_stream() -> None:
    assert frameworks.stream_probes() == ("torch",)
    assert frameworks.stream_probe(["jax", "torch"]) == "torch"
    assert frameworks.stream_probe(["jax", "tensorflow"]) is None


def test_threads_must_be_a_positive_integer() -> None:
    frameworks.check_threads(3)
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            frameworks.check_threads(bad)
