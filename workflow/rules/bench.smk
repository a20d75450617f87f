# One job per benchmark cell and process: framework × mode × architecture × batch, measured
# in bench.processes fresh processes (timing jobs, run in one seeded shuffled order).


rule bench:
    output:
        "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}.nc",
    log:
        "results/logs/bench/{framework}/{version}/{mode}/{arch}/b{batch}.log",
    priority: bench_priority
    conda:
        framework_env
    threads: THREADS
    resources:
        timing_slot=1,
    params:
        cell=cell_request,
    script:
        "../scripts/bench.py"


use rule bench as bench_process with:
    output:
        "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}-p{process}.nc",
    log:
        "results/logs/bench/{framework}/{version}/{mode}/{arch}/b{batch}-p{process}.log",
