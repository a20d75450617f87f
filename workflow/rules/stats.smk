# Statistics and roofline metrics of every cell; Markdown tables.


rule stats:
    input:
        bench=rules.aggregate_bench.output[0],
        hardware=HARDWARE_JSON,
    output:
        nc="results/summary/stats.nc",
        csv=report(
            "results/summary/stats.csv",
            caption="../report/stats.rst",
            category="inference",
        ),
        latency=table_path("latency"),
        compile_speedup=table_path("compile_speedup"),
        efficiency=table_path("efficiency"),
        winners=table_path("winners"),
        failed=table_path("failed"),
        flagged=table_path("flagged"),
    log:
        "results/logs/stats/stats.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    params:
        stats=lookup(within=config, dpath="stats"),
        seed=config["seed"],
    script:
        "../scripts/stats.py"
