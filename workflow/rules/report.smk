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
        stats_csv=rules.stats.output.csv,
        tables=[rules.stats.output[name] for name in STATS_TABLES],
        hardware=HARDWARE_JSON,
        equivalence=rules.merge_checks.output.equivalence,
        flops=rules.merge_checks.output.flops,
        bench=rules.aggregate_bench.output[0],
        figures=[rules.figures.output[name] for name in FIGURES]
        + [rules.figures_training.output[name] for name in TRAINING_FIGURES],
        train_stats=rules.aggregate_train.output.nc,
        compare=expand("results/compare/{framework}.csv", framework=COMPARED),
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
    script:
        "../scripts/report.py"
