# results/report.md: every number from the data files; results/findings.html, its opening for
# the HTML report (`snakemake --report`), listed first there and included in its landing text.

# Categories are listed by name: the digit puts the findings before every other.
FINDINGS_CATEGORY = "1. Findings"


rule report:
    input:
        stats=rules.stats.output.nc,
        tables=PLAN.table_files(catalog.table_names()),
        hardware=HARDWARE_FILES,
        equivalence=rules.merge_checks.output.equivalence,
        flops=rules.merge_checks.output.flops,
        figures=per_system_figures(rules.figures, FIGURES)
        + per_system_figures(rules.figures_training, TRAINING_FIGURES),
        systems_figures=[rules.figures_systems.output[name] for name in SYSTEMS_FIGURES],
        train_stats=rules.aggregate_train.output.nc,
        compare=COMPARE_TABLES,
        artifacts=PLAN.all_artifact_manifests(),
    output:
        report(
            "results/report.md",
            caption="../report/report_md.rst",
            category=FINDINGS_CATEGORY,
            labels={"page": "full report (report.md)"},
        ),
        findings=report(
            "results/findings.html",
            caption="../report/findings.rst",
            category=FINDINGS_CATEGORY,
            labels={"page": "findings"},
        ),
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
