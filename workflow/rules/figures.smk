# Figures from the statistics and the hardware files only: one set per system, and the
# systems side by side.

TRAINING_FIGURES = ["training_time", "training_curves"]

FIGURES = [
    "hardware",
    "roofline",
    "latency",
    "speedup",
    "efficiency",
    "scaling",
    "stability",
    "startup",
    "attribution",
]
SYSTEMS_FIGURES = ["systems"]


rule figures:
    input:
        stats=rules.stats.output.nc,
        hardware=paths.HARDWARE,
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
        table_batch=lookup(within=config, dpath="stats/table_batch"),
        cv_threshold_pct=lookup(within=config, dpath="stats/cv_threshold_pct"),
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
        table_batch=lookup(within=config, dpath="stats/table_batch"),
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
