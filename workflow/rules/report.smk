# results/report.md: every number from the data files.

STATS_TABLES = [
    "latency",
    "compile_speedup",
    "efficiency",
    "winners",
    "failed",
    "flagged",
]


rule report:
    input:
        stats=rules.stats.output.nc,
        tables=[path for name in STATS_TABLES for path in rules.stats.output[name]],
        hardware=HARDWARE_FILES,
        equivalence=rules.merge_checks.output.equivalence,
        flops=rules.merge_checks.output.flops,
        bench=rules.aggregate_bench.output[0],
        figures=per_system_figures(rules.figures, FIGURES)
        + per_system_figures(rules.figures_training, TRAINING_FIGURES),
        systems_figures=[rules.figures_systems.output[name] for name in SYSTEMS_FIGURES],
        train_stats=rules.aggregate_train.output.nc,
        compare=COMPARE_TABLES,
        artifacts=PLAN.all_artifact_manifests(),
    output:
        "results/report.md",
    log:
        "results/logs/report/report.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        settings=lookup(within=config, dpath="bench"),
        systems={name: system.describe() for name, system in PLAN.systems.items()},
    script:
        "../scripts/report.py"
