# Figures from the statistics and the hardware files only: one set per system, and the
# systems side by side (the list: fwbench.present.catalog.FIGURES).

FIGURES = catalog.figure_names(catalog.INFERENCE)
SYSTEMS_FIGURES = catalog.figure_names(catalog.SYSTEMS)
TRAINING_FIGURES = catalog.figure_names(catalog.TRAINING)


rule figures:
    input:
        stats=rules.stats.output.nc,
        hardware=paths.HARDWARE,
        equivalence=rules.merge_checks.output.equivalence,
    output:
        **figure_outputs(FIGURES, "inference"),
    log:
        "results/logs/figures/{system}/inference.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        dpi=150,
    script:
        "../scripts/figures.py"


rule figures_systems:
    input:
        stats=rules.stats.output.nc,
    output:
        **figure_outputs(SYSTEMS_FIGURES, "inference", "results/figures"),
    log:
        "results/logs/figures/systems.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        dpi=150,
    script:
        "../scripts/figures.py"


rule figures_training:
    input:
        train_stats=rules.aggregate_train.output.nc,
    output:
        **figure_outputs(TRAINING_FIGURES, "training"),
    log:
        "results/logs/figures/{system}/training.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        dpi=150,
    script:
        "../scripts/figures.py"
