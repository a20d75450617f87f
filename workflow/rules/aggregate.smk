# Every raw timing of the current framework versions into one xarray dataset.


rule aggregate_bench:
    input:
        cells=expand(
            "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}.nc",
            zip,
            **{key: [cell[key] for cell in CELLS] for key in CELLS[0]},
        ),
    output:
        "results/aggregate/bench.nc",
    log:
        "results/logs/aggregate/bench.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    script:
        "../scripts/aggregate.py"
