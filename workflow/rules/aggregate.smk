# Every raw timing of the current framework versions, on every system, into one xarray dataset.


rule aggregate_bench:
    input:
        cells=CELL_FILES,
    output:
        "results/aggregate/bench.nc",
    log:
        "results/logs/aggregate/bench.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        systems=CELL_SYSTEMS,
    script:
        "../scripts/aggregate.py"
