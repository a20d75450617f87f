# Statistics and roofline metrics of every cell against its own system's hardware file, and
# each system's Markdown tables from them (the list: fwbench.present.catalog.TABLES).


rule stats:
    input:
        bench=rules.aggregate_bench.output[0],
        hardware=HARDWARE_FILES,
        # read with each system's hardware file (io.hardware_file.read_hardware_record)
        peaks=PLAN.hardware_peak_files(),
        rounds=PLAN.rounds_files(),
    output:
        nc="results/summary/stats.nc",
        csv=report(
            "results/summary/stats.csv",
            caption="../report/stats.rst",
            category="inference",
        ),
        comparisons=report(
            "results/summary/comparisons.csv",
            caption="../report/comparisons.rst",
            category="inference",
        ),
    log:
        "results/logs/stats/stats.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        stats=lookup(within=config, dpath="stats"),
        seed=config["seed"],
        systems=SYSTEM_NAMES,
    script:
        "../scripts/stats.py"


rule tables:
    input:
        stats=rules.stats.output.nc,
    output:
        **{name: PLAN.table_file(name) for name in catalog.table_names()},
    log:
        "results/logs/tables/{system}.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    script:
        "../scripts/tables.py"
