# Every raw timing of the current framework versions, on every system, into one xarray dataset.


rule aggregate_bench:
    input:
        cells=PLAN.cell_files,
    output:
        "results/aggregate/bench.nc",
    log:
        "results/logs/aggregate/bench.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        systems=PLAN.cell_systems,
    script:
        "../scripts/aggregate.py"
