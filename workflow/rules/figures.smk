# Figures from the statistics and the hardware file only.

TRAINING_FIGURES = ["training_time", "training_curves"]

FIGURES = [
    "hardware",
    "roofline",
    "latency",
    "speedup",
    "efficiency",
    "scaling",
    "stability",
]


rule figures:
    input:
        stats=rules.stats.output.nc,
        hardware=HARDWARE_JSON,
    output:
        **figure_outputs(FIGURES, "inference"),
    log:
        "results/logs/figures/inference.log",
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


rule figures_training:
    input:
        train_stats=rules.aggregate_train.output.nc,
    output:
        **figure_outputs(TRAINING_FIGURES, "training"),
    log:
        "results/logs/figures/training.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        dpi=150,
    script:
        "../scripts/figures.py"
