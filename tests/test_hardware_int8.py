"""The hardware stage's int8 GEMM peak and its evidence of which instructions computed each
dtype's best GEMM: oneDNN's JIT kernel names, or the rate against each instruction's
ceiling."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.hardware import peaks, theory, workers
from fwbench.host import identity, onednn
from fwbench.io.hardware_file import (
    peak_file,
    read_hardware_record,
    record_from_document,
    write_hardware,
)
from fwbench.plan import paths

from synthetic import hardware_document

AMX_INT8_CPU = {f: True for f in ("avx512f", "fma", "avx512_vnni", "amx_int8", "amx_tile")}
VNNI_CPU = {"avx512f": True, "fma": True, "avx512_vnni": True}


def test_onednn_kernel_names_say_their_instruction_family_and_packing_kernels_do_not_count():
    names = [
        "jit_avx512_core_amx_copy_kern_t",  # packing: not what multiplied
        "jit_avx512_core_amx_gemm_kern_t",
        "jit_avx512_core_gemv_s8x8s32_kern_t",
    ]
    assert onednn.families(names) == ["AMX", "AVX-512"]
    assert onednn.families(["brgemm_avx512_core_vnni_kernel"]) == ["VNNI"]
    assert onednn.families(["jit_avx512_core_amx_copy_kern_t"]) == []
    assert onednn.families([]) == []


def test_the_jit_log_returns_each_kernel_generated_since_its_last_take_and_removes_its_map():
    pid = 2**22 + os.getpid()  # above pid_max: no live process writes this map
    log = onednn.JitLog(pid)
    log.path.write_text("7f00 40 jit_a_t.0\n7f40 40 jit_a_t.1\n")
    assert log.take() == ["jit_a_t"]
    with log.path.open("a") as handle:
        handle.write("7f80 40 jit_b_t.2\n")
    assert log.take() == ["jit_b_t"]
    log.close()
    assert not log.path.exists()


def test_each_dtype_lists_the_cpus_instructions_with_their_ceilings():
    ceilings = theory.instruction_ceilings(AMX_INT8_CPU, "GenuineIntel", 6)
    assert ceilings["int8"] == {"AMX-INT8 (TDPBUSD)": 2048, "AVX512-VNNI (VPDPBUSD)": 256}
    assert ceilings["bfloat16"] == {}  # no bf16 instruction on this CPU
    assert identity.dtype_instructions({})["int8"] == []


def test_a_rate_above_every_other_instructions_ceiling_names_the_one_that_reaches_it():
    ceilings = theory.instruction_ceilings(AMX_INT8_CPU, "GenuineIntel", 6)["int8"]
    clock, cores = 2e9, 2
    above_vnni = {"best_flops_per_s": 300 * cores * clock}  # 300 op/cycle/core > VNNI's 256
    found = theory.served_by(above_vnni, ceilings, cores, clock)
    assert found["instructions"] == ["AMX-INT8 (TDPBUSD)"]
    assert "AVX512-VNNI (VPDPBUSD) 256" in found["evidence"]
    within = theory.served_by({"best_flops_per_s": 100 * cores * clock}, ceilings, cores, clock)
    assert within["instructions"] == [] and within["evidence"].startswith("undetermined")
    named = {"best_flops_per_s": 1.0, "kernels": {"instructions": ["AMX"]}}
    assert theory.served_by(named, ceilings, cores, clock)["instructions"] == ["AMX"]


def test_int8_is_native_only_with_a_dot_product_instruction_and_says_what_runs_instead():
    isa = {flag: False for flag in identity.ISA_FLAGS}
    reason = identity.dtype_support("cpu", {"isa": isa}, None)["int8"]
    assert "VPMADDUBSW" in reason and "reduce_range" in reason
    assert identity.dtype_support("cpu", {"isa": isa | VNNI_CPU}, None)["int8"] is None


def test_the_onnxrt_runtime_measures_int8_where_a_configured_mode_runs_in_it():
    assert frameworks.gemm_runtimes({"torch": ["eager", "onnxrt"], "jax": ["jit"]}) == ["onnxrt"]
    assert frameworks.gemm_runtimes({"torch": ["eager", "aoti"]}) == []


def test_onnx_runtimes_int8_gemm_is_exact_and_counts_two_operations_per_multiply_add():
    result = workers.run_worker(
        "onnxrt", "gemm", _sweep(["int8"]), threads=1, device="cpu", timeout_s=300
    )
    sweep = result["result"]["int8"]
    assert sweep["call"].startswith("onnxruntime MatMulInteger")
    first = sweep["sizes"][0]
    assert first["flops"] == 2 * 64**3 and first["flops_per_s"] > 0


@pytest.mark.tensorflow
def test_a_framework_without_an_int8_gemm_records_why():
    result = workers.run_worker(
        "tensorflow", "gemm", _sweep(["int8"]), threads=1, device="cpu", timeout_s=300
    )
    assert "TensorFlow has no int8 GEMM" in result["result"]["int8"]["error"]


def _bf16_cpu() -> bool:
    isa = identity.cpu_identity()["isa"]
    return bool(isa["avx512_bf16"] or isa["amx_bf16"])


@pytest.mark.torch
@pytest.mark.skipif(not _bf16_cpu(), reason="the CPU has no bf16 GEMM instruction")
def test_the_kernel_pass_finds_the_bf16_instruction_a_large_torch_gemm_ran():
    result = workers.run_worker(
        "torch",
        "gemm_kernels",
        {"best_n": {"bfloat16": 512, "int8": 256}},
        threads=1,
        device="cpu",
        timeout_s=300,
        env=onednn.PROFILE_ENV,
    )["result"]
    isa = identity.cpu_identity()["isa"]
    expected = "AMX" if isa["amx_bf16"] else "AVX512-BF16"
    kernels = result["bfloat16"]["onednn_jit_kernels"]
    assert kernels
    compute = [name for name in kernels if not any(p in name for p in onednn.DATA_MOVEMENT)]
    if any(part in name for name in compute for part, _ in onednn.FAMILIES):
        assert expected in result["bfloat16"]["instructions"], result["bfloat16"]
    else:  # oneDNN names its brgemm kernel without its ISA (torch 2.13 on a Zen 4): nothing
        # to read, and nothing claimed
        assert result["bfloat16"]["instructions"] == [], result["bfloat16"]
    assert np.all(
        [name.startswith(("jit", "brg")) for name in result["bfloat16"]["onednn_jit_kernels"]]
    )


def _sweep(dtypes: list[str]) -> dict:
    return {"min_n": 64, "max_n": 64, "trials": 1, "dtypes": dtypes, "tolerance": 0.02}


def _peak_document(rate: float) -> dict:
    entry = {
        "best_flops_per_s": rate,
        "best_framework": "onnxrt",
        "per_framework": {"onnxrt": {"flops_per_s": rate}, "torch": {"flops_per_s": rate / 2}},
        "served_by": {"instructions": ["AMX-INT8 (TDPBUSD)"], "evidence": "the rate"},
    }
    return {
        "compute": {
            "dtypes": {"int8": entry},
            "instructions": {"int8": {"AMX-INT8 (TDPBUSD)": 2048}},
        },
        "theoretical": {"flops_per_s": {"int8": 4 * rate}, "flops_source": {"int8": "ISA model"}},
        "ridge": {"per_dtype": {"int8": {"measured_flop_per_byte": 100.0}}},
    }


def test_the_int8_peak_file_beside_the_hardware_file_reads_as_part_of_its_record(tmp_path):
    hardware = tmp_path / "local.json"
    write_hardware(hardware_document(), hardware)
    assert "int8" not in read_hardware_record(hardware).peaks  # no peak file yet
    peak = peak_file(hardware, "int8")
    assert peak == tmp_path / "local" / "gemm-int8.json"
    assert paths.HARDWARE_PEAK.format(system="local", dtype="int8") == (
        "results/hardware/local/gemm-int8.json"  # where the rule writes it: where it is read
    )
    write_hardware(_peak_document(2e12), peak)
    record = read_hardware_record(hardware)
    int8 = record.peaks["int8"]
    assert int8.measured_flops_per_s == 2e12 and int8.measured_by == "onnxrt"
    assert int8.gemm_flops_per_s == {"onnxrt": 2e12, "torch": 1e12}
    assert int8.theoretical_flops_per_s == 8e12 and int8.measured_ridge == 100.0
    assert int8.served_by == ("AMX-INT8 (TDPBUSD)",)
    # the hardware file's own dtypes are untouched
    assert (
        record.peaks["float32"] == record_from_document(hardware_document(), "x").peaks["float32"]
    )


def test_a_dtype_without_a_job_of_its_own_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="'float32' has no peak job of its own"):
        peaks.measure_peak(tmp_path / "o.json", tmp_path / "h.json", "float32", {}, [], (), 1, "")
