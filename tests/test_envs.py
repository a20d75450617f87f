"""The per-rule conda envs: what each one installs, that the versions are requirements.txt's,
and which env each rule of the workflow names. conda is not reachable here, so the envs are
checked as files, and the rules through Snakemake's parse of the workflow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fwbench.provenance import pinned_versions

from conftest import REPO

ENVS = REPO / "envs"
FRAMEWORKS = ("torch", "jax", "tensorflow")
# The distributions that make up each framework (optax and keras travel with theirs).
FRAMEWORK_DISTS = {
    "torch": {"torch"},
    "jax": {"jax", "jaxlib", "optax", "jax-cuda12-plugin", "jax-cuda13-plugin"},
    "tensorflow": {"tensorflow", "tensorflow-cpu", "keras"},
}
ENV_FILES = sorted(ENVS.glob("*.yaml"))


def normalize(name: str) -> str:
    """A distribution name without extras, as PyPI compares names."""
    return name.split("[")[0].strip().lower().replace("_", "-").replace(".", "-")


def requirements() -> dict[str, str]:
    """{name: version} of every `name==version` line in requirements.txt (markers dropped)."""
    pins = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        spec = line.split("#")[0].split(";")[0].strip()
        if "==" in spec:
            name, version = spec.split("==")
            pins[normalize(name)] = version.strip()
    return pins


def pip_entries(env_file: Path) -> list[str]:
    spec = yaml.safe_load(env_file.read_text())
    for entry in spec["dependencies"]:
        if isinstance(entry, dict) and "pip" in entry:
            return [str(line) for line in entry["pip"] if not str(line).startswith("-")]
    raise AssertionError(f"{env_file.name} has no pip section")


def packages(env_file: Path) -> dict[str, str | None]:
    """{normalized name: pinned version or None} of an env's pip packages."""
    found = {}
    for line in pip_entries(env_file):
        name, _, version = line.partition("==")
        found[normalize(name)] = version.strip() or None
    return found


def public(version: str) -> str:
    return version.split("+")[0]


def test_there_is_a_cpu_and_a_cuda_env_per_framework_and_for_hardware_and_analysis():
    expected = {f"{fw}{variant}.yaml" for fw in FRAMEWORKS for variant in ("", "-cuda")}
    expected |= {"hardware.yaml", "hardware-cuda.yaml", "analysis.yaml"}
    assert {path.name for path in ENV_FILES} == expected


@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda path: path.name)
def test_each_env_is_python_311_from_conda_forge_with_pip_packages(env_file):
    spec = yaml.safe_load(env_file.read_text())
    assert spec["channels"][0] == "conda-forge"
    assert "python=3.11" in spec["dependencies"]
    assert "numpy" in packages(env_file)


@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda path: path.name)
def test_env_pins_are_the_versions_requirements_txt_pins(env_file):
    pins = requirements()
    env = packages(env_file)
    for name, version in env.items():
        if name in pins:
            assert version is not None, f"{env_file.name}: {name} unpinned, requirements pin it"
            assert public(version) == pins[name], f"{env_file.name}: {name}=={version}"
        else:
            # Beyond requirements.txt, an env pins only the GPU twins of what it pins: JAX's
            # CUDA plugin at JAX's version, onnxruntime-gpu at onnxruntime's.
            plugin = name.startswith("jax-cuda") and version == env.get("jax")
            gpu_runtime = name == "onnxruntime-gpu" and version == pins.get("onnxruntime")
            assert version is None or plugin or gpu_runtime, (
                f"{env_file.name} pins {name}=={version}, which requirements.txt does not pin"
            )


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("variant", ["", "-cuda"])
def test_a_framework_env_has_its_framework_and_none_of_the_others(framework, variant):
    env = set(packages(ENVS / f"{framework}{variant}.yaml"))
    assert env & FRAMEWORK_DISTS[framework]
    for other in FRAMEWORKS:
        if other != framework:
            assert not env & FRAMEWORK_DISTS[other], f"{framework}{variant}.yaml has {other}"


@pytest.mark.parametrize("variant", ["", "-cuda"])
def test_the_hardware_env_has_every_framework(variant):
    env = set(packages(ENVS / f"hardware{variant}.yaml"))
    for framework in FRAMEWORKS:
        assert env & FRAMEWORK_DISTS[framework], f"hardware{variant}.yaml lacks {framework}"


def test_the_analysis_env_has_no_framework():
    env = set(packages(ENVS / "analysis.yaml"))
    assert not env & set().union(*FRAMEWORK_DISTS.values())
    assert {"xarray", "matplotlib", "scipy"} <= env


def test_cpu_envs_install_cpu_builds_and_cuda_envs_gpu_builds():
    torch_cpu = (ENVS / "torch.yaml").read_text()
    assert packages(ENVS / "torch.yaml")["torch"].endswith("+cpu")
    assert "download.pytorch.org/whl/cpu" in torch_cpu
    assert "download.pytorch.org/whl/cpu" not in (ENVS / "torch-cuda.yaml").read_text()
    assert "+" not in packages(ENVS / "torch-cuda.yaml")["torch"]
    assert "tensorflow-cpu" in packages(ENVS / "tensorflow.yaml")
    assert "tensorflow[and-cuda]==2.21.0" in pip_entries(ENVS / "tensorflow-cuda.yaml")
    assert "tensorflow-cpu" not in packages(ENVS / "tensorflow-cuda.yaml")
    assert any(name.startswith("jax-cuda") for name in packages(ENVS / "jax-cuda.yaml"))
    assert not any(name.startswith("jax-cuda") for name in packages(ENVS / "jax.yaml"))


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("variant", ["", "-cuda"])
def test_under_sdm_conda_results_are_named_by_the_env_pinned_version(framework, variant):
    # common.smk names results by provenance.pinned_versions(<env>) under --sdm conda.
    versions = pinned_versions(ENVS / f"{framework}{variant}.yaml", framework)
    name, main = next(iter(versions.items()))
    assert public(main) == requirements()[normalize(name)]
    if framework == "torch":  # the same name as the CPU build `make setup` installs
        assert main == ("2.13.0+cpu" if variant == "" else "2.13.0")


# ------------------------------------------------------------------ the rules' envs

PROBE = """
import json, sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.api import SnakemakeApi
from snakemake.settings.types import (
    ConfigSettings, DeploymentMethod, DeploymentSettings, OutputSettings, ResourceSettings
)

repo, workdir, configfile, out = map(Path, sys.argv[1:5])
with SnakemakeApi(OutputSettings()) as api:
    workflow_api = api.workflow(
        snakefile=repo / "Snakefile",
        workdir=workdir,
        config_settings=ConfigSettings(configfiles=[configfile]),
        resource_settings=ResourceSettings(cores=1),
        # Rules name their envs under --sdm conda only (common.smk: FRAMEWORK_ENV).
        deployment_settings=DeploymentSettings(deployment_method={DeploymentMethod.CONDA}),
    )
    envs = {}
    for rule in workflow_api._workflow.rules:  # the parsed rules (no public accessor)
        if rule.norun:
            continue
        env = rule.conda_env
        if callable(env):  # per job: of the default config's one system, per framework
            job = lambda fw: SimpleNamespace(framework=fw, system="local")
            env = {fw: str(env(job(fw))) for fw in sys.argv[5:]}
            if len(set(env.values())) == 1:  # the same env for every framework
                env = next(iter(env.values()))
        elif env is not None:
            env = str((Path(rule.snakefile).parent / env).resolve())
        envs[rule.name] = env
out.write_text(json.dumps(envs))
"""


@pytest.fixture(scope="module")
def rule_envs(tmp_path_factory) -> dict[str, str | dict[str, str] | None]:
    """{rule: env path, or {framework: env path} for a per-framework env} of every rule
    that runs something, as Snakemake parses the smoke sweep."""
    workdir = tmp_path_factory.mktemp("rule-envs")
    out = workdir / "envs.json"
    args = [str(REPO), str(workdir), str(REPO / "config/test.yaml"), str(out), *FRAMEWORKS]
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


def test_every_rule_that_runs_something_names_an_existing_env(rule_envs):
    assert {"hardware", "bench", "checks", "aggregate_bench"} <= set(rule_envs)
    for rule, env in rule_envs.items():
        assert env is not None, f"rule {rule} names no conda env"
        for path in env.values() if isinstance(env, dict) else [env]:
            assert Path(path).is_file(), f"rule {rule}: {path} does not exist"
            assert Path(path).parent == ENVS, f"rule {rule}: {path} is not in envs/"


def test_framework_rules_run_each_framework_in_its_own_env(rule_envs):
    per_framework = {rule: env for rule, env in rule_envs.items() if isinstance(env, dict)}
    assert {"bench", "checks"} <= set(per_framework)
    for rule, envs in per_framework.items():
        for framework, path in envs.items():
            assert Path(path) == ENVS / f"{framework}.yaml", f"{rule}/{framework}: {path}"


def test_every_other_rule_but_hardware_runs_in_the_analysis_env(rule_envs):
    others = [rule for rule, env in rule_envs.items() if isinstance(env, str)]
    assert "aggregate_bench" in others and "hardware_peak" in others
    for rule in others:
        if rule not in ("hardware", "hardware_peak"):
            assert Path(rule_envs[rule]) == ENVS / "analysis.yaml", rule
    assert rule_envs["hardware_peak"] == rule_envs["hardware"]


def test_the_hardware_rule_runs_in_an_env_with_every_framework(rule_envs):
    # The hardware job measures a GEMM peak with each configured framework.
    env = set(packages(Path(rule_envs["hardware"])))
    for framework in FRAMEWORKS:
        assert env & FRAMEWORK_DISTS[framework], f"{rule_envs['hardware']} lacks {framework}"
    assert "onnxruntime" in env  # its int8 GEMM peak (runtimes/onnxrt_hardware.py)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("variant", ["", "-cuda"])
def test_an_env_whose_cells_run_in_onnx_runtime_has_what_bf16_and_int8_cells_import(
    framework, variant
):
    """runtimes.onnxrt feeds bf16 through ml_dtypes, and onnxruntime.quantization (the int8
    export) imports it too (the hardware env's int8 GEMM needs neither)."""
    env_file = ENVS / f"{framework}{variant}.yaml"
    env = set(packages(env_file))
    if env & {"onnxruntime", "onnxruntime-gpu"}:
        assert {"onnx", "ml-dtypes"} <= env, f"{env_file.name} lacks onnx or ml_dtypes"
