# Upgrades: each framework's current cells against an earlier version's cells still on disk.


rule compare_framework:
    input:
        old=lambda wildcards: _cell_files(
            wildcards.framework, BASELINES[wildcards.framework]
        ),
        new=lambda wildcards: current_cells(wildcards.framework),
    output:
        table="results/compare/{framework}.csv",
        figure=report(
            "results/compare/{framework}.png",
            caption="../report/compare.rst",
            category="inference",
        ),
    log:
        "results/logs/compare/{framework}.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        settings=lambda wildcards: dict(
            threshold_pct=config["compare"]["threshold_pct"],
            alpha=config["stats"]["alpha"],
            confidence=config["stats"]["confidence"],
            resamples=config["stats"]["bootstrap_resamples"],
            seed=config["seed"],
        ),
    script:
        "../scripts/compare.py"


rule compare:
    input:
        tables=expand("results/compare/{framework}.csv", framework=COMPARED),
    output:
        "results/compare/summary.md",
    log:
        "results/logs/compare/summary.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    script:
        "../scripts/compare_summary.py"
