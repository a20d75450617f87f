# Statistics and roofline metrics of every cell against its own system's hardware file;
# Markdown tables per system.


rule stats:
    input:
        bench=rules.aggregate_bench.output[0],
        hardware=HARDWARE_FILES,
    output:
        nc="results/summary/stats.nc",
        csv=report(
            "results/summary/stats.csv",
            caption="../report/stats.rst",
            category="inference",
        ),
        latency=PLAN.table_files("latency"),
        compile_speedup=PLAN.table_files("compile_speedup"),
        efficiency=PLAN.table_files("efficiency"),
        winners=PLAN.table_files("winners"),
        failed=PLAN.table_files("failed"),
        flagged=PLAN.table_files("flagged"),
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
