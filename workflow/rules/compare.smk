# Upgrades: each system's current cells of a framework against an earlier version's cells of
# the same system still on disk.


rule compare_framework:
    input:
        old=lambda wildcards: paths.cells_on_disk(
            wildcards.system,
            wildcards.framework,
            PLAN.baselines[(wildcards.system, wildcards.framework)],
        ),
        new=lambda wildcards: PLAN.current_cells(wildcards.system, wildcards.framework),
    output:
        table="results/compare/{system}/{framework}.csv",
        figure=report(
            "results/compare/{system}/{framework}.png",
            caption="../report/compare.rst",
            category="inference",
            subcategory="{system}",
        ),
    log:
        "results/logs/compare/{system}/{framework}.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        stats=lookup(within=config, dpath="stats"),
        seed=config["seed"],
    script:
        "../scripts/compare.py"


rule compare:
    input:
        tables=COMPARE_TABLES,
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
