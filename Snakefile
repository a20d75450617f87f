# fwbench: PyTorch vs JAX vs TensorFlow, eager vs compiled, against the hardware's own limits.
# Stages and files: docs/architecture.md. Configuration: config/config.yaml and its schema.
from snakemake.utils import min_version

min_version("9.0")


configfile: f"{workflow.basedir}/config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/hardware.smk"
include: "workflow/rules/export.smk"
include: "workflow/rules/checks.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/rounds.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


onstart:
    drop_default_rate_limiter(workflow)  # workarounds.smk says why


# Cheap rules run where Snakemake runs, never as cluster jobs.
localrules:
    merge_checks,
    aggregate_bench,
    aggregate_train,
    stats,
    tables,
    compare_framework,
    compare,
    figures,
    figures_systems,
    figures_training,
    report,


rule all:
    default_target: True
    input:
        HARDWARE_FILES,
        rules.report.output,
        rules.merge_checks.output,
        rules.compare.output if COMPARE_TABLES else [],
