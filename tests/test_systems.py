"""The config's systems: defaults, SLURM placement, and bad entries named."""

from __future__ import annotations

import pytest

from fwbench.systems import parse_systems


def resolve(threads):
    return 4 if threads == "auto" else threads


def test_the_default_is_one_local_system_with_the_top_level_device_and_threads():
    systems = parse_systems({"systems": {"local": {}}, "device": "cpu", "threads": "auto"}, resolve)
    [local] = systems.values()
    assert (local.name, local.device, local.threads, local.slurm) == ("local", "cpu", 4, None)
    assert local.resources() == {}
    assert local.placement() == {"device": "cpu", "threads": 4}


def test_a_slurm_system_maps_onto_the_executor_plugins_resources():
    slurm = {"partition": "gpu", "constraint": "h100", "account": "ml", "gpu_model": "h100"}
    config = {"systems": {"h100": {"device": "cuda", "threads": 16, "slurm": slurm}}}
    [system] = parse_systems(config, resolve).values()
    assert system.resources() == {
        "slurm_partition": "gpu",
        "constraint": "h100",
        "slurm_account": "ml",
        "gpu": 1,  # a cuda system asks for one GPU unless it says
        "gpu_model": "h100",
    }
    assert system.placement()["gpu"] == 1 and system.threads == 16
    assert "SLURM (slurm_partition=gpu" in system.describe()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"slurm": {"partition": "cpu"}}, r"systems.big.threads: a system whose jobs go to SLURM"),
        ({"threads": 0}, r"systems.big.threads: threads must be a positive integer"),
        ({"threads": 2, "slurm": {"gpu_model": "a100"}}, r"gpu_model='a100' without gpus"),
    ],
)
def test_a_bad_system_is_refused_naming_it(entry, message):
    def strict(threads):
        if threads == "auto" or threads >= 1:
            return 4 if threads == "auto" else threads
        raise ValueError(f"threads must be a positive integer or 'auto', got {threads!r}")

    with pytest.raises(ValueError, match=message):
        parse_systems({"systems": {"big": entry}, "threads": "auto"}, strict)


def test_a_system_named_like_a_framework_or_a_bad_path_is_refused():
    with pytest.raises(ValueError, match="'torch' is also a framework name"):
        parse_systems({"systems": {"torch": {}}}, resolve, reserved=("torch",))
    with pytest.raises(ValueError, match="systems.a/b: a system name"):
        parse_systems({"systems": {"a/b": {}}}, resolve)
    with pytest.raises(ValueError, match="names no system"):
        parse_systems({"systems": {}}, resolve)


def test_threads_auto_is_refused_for_every_system_when_jobs_go_to_a_cluster():
    config = {"systems": {"local": {}}, "threads": "auto"}
    assert parse_systems(config, resolve)["local"].threads == 4
    with pytest.raises(ValueError, match="systems.local.threads: a system whose jobs go to SLURM"):
        parse_systems(config, resolve, remote=True)
