# Wiring: validate the config, plan the sweep in the library (fwbench.plan), and name what the
# rules use. Every fact of the sweep comes from PLAN; Snakemake workarounds: workarounds.smk.
import json
import os
import sys
from pathlib import Path

from snakemake.utils import validate

from fwbench import plan as fwplan
from fwbench.frameworks import gemm_runtimes
from fwbench.plan import paths
from fwbench.plan.versions import env_file, versions_source
from fwbench.present import catalog

fwplan.refuse_moved_keys(config)
validate(config, schema="../schemas/config.schema.yaml")
validate(config["train"], schema="../schemas/train.schema.yaml")


include: "workarounds.smk"


ENVS = Path(workflow.basedir) / "envs"
RESOURCES = Path(workflow.basedir) / "resources"
PLAN = fwplan.make_plan(
    config,
    versions_of=versions_source(ENVS if USE_CONDA else None),
    remote=not workflow.local_exec,
)
SYSTEM_NAMES = list(PLAN.systems)
HARDWARE_FILES = PLAN.hardware_files()
ARCHS = config["architectures"]
COMPARE_TABLES = PLAN.compare_tables()


wildcard_constraints:
    **PLAN.wildcard_patterns(),


def conda_env(name, device="cpu"):
    """The conda env file of a rule: a framework's, 'hardware' or 'analysis'."""
    return env_file(ENVS, name, device)


FRAMEWORK_ENV = conda_env_of(
    lambda wildcards: conda_env(
        wildcards.framework, PLAN.systems[wildcards.system].device
    )
)
HARDWARE_ENV = conda_env_of(
    lambda wildcards: conda_env("hardware", PLAN.systems[wildcards.system].device)
)
# The deployment runtimes whose GEMM peaks a hardware_peak job measures beside the frameworks'.
HARDWARE_RUNTIMES = gemm_runtimes(
    {fw: config["modes"][fw] for fw in config["frameworks"]}
)
SYSTEM_THREADS = per_system(lambda system: system.threads)
# The SLURM resources of a timing job: its system's partition, constraint, account and GPUs.
# None drops a resource (the profile's default does not come back), so what a system does not
# name the cluster decides; none at all for local systems.
SYSTEM_RESOURCES = {
    key: per_system(lambda system, key=key: system.resources().get(key))
    for key in sorted({key for s in PLAN.systems.values() for key in s.resources()})
}
bench_priority = per_job(lambda wildcards: PLAN.bench_priority(wildcards))
cell_request = per_job(lambda wildcards: PLAN.cell_request(wildcards).to_json())
artifact_input = per_job(lambda wildcards: PLAN.artifact_input(wildcards))
rounds_cells = per_job(lambda wildcards: PLAN.rounds_cells(wildcards))
rounds_priority = per_job(lambda wildcards: PLAN.rounds_priority(wildcards))
rounds_variants = per_job(lambda wildcards: json.dumps(PLAN.rounds_variants(wildcards)))
export_request = per_job(lambda wildcards: PLAN.export_request(wildcards).to_json())
system_params = per_job(lambda wildcards: PLAN.systems[wildcards.system].placement())
train_params = per_job(lambda wildcards: PLAN.train_params(wildcards))
train_settings = per_job(lambda wildcards: PLAN.train_settings(wildcards))


def figure_outputs(names, category, directory="results/figures/{system}"):
    """Per figure: `<name>` the PNG, registered in the report, and `<name>_svg`."""
    outputs = {}
    for name in names:
        outputs[name] = report(
            f"{directory}/{name}.png",
            caption=f"../report/{name}.rst",
            category="hardware" if name == "hardware" else category,
            subcategory="{system}" if "{system}" in directory else None,
        )
        outputs[f"{name}_svg"] = f"{directory}/{name}.svg"
    return outputs


def per_system_figures(producer, names):
    """Every system's files of the figure outputs `names` of a per-system producer."""
    return [
        path
        for system in SYSTEM_NAMES
        for name in names
        for path in expand(producer.output[name], system=system)
    ]
